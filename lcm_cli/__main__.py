"""`python -m lcm_cli` runs the same entry point as the `lcm` script."""

from lcm_cli.cli import run

if __name__ == "__main__":
    run()
