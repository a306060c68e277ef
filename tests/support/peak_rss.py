"""Run a command and report its peak RSS: ``python peak_rss.py OUT.json CMD ARGS...``.

Run it as a fresh, small process: ``getrusage(RUSAGE_CHILDREN)`` gives the largest peak of
the processes it waited for (the command and the helpers the command waited for), and a
child forked from a big process (pytest) would inherit that process's peak instead.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys


def main() -> None:
    out, command = sys.argv[1], sys.argv[2:]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(
            {"code": done.returncode, "peakKiB": peak_kib, "stdout": done.stdout, "stderr": done.stderr},
            handle,
        )


if __name__ == "__main__":
    main()
