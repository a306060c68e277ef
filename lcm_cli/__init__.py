"""lcm: Lossless Context Management for an agent's lcm.db."""

# A literal, so `lcm --version` needs no package metadata lookup at start-up.
__version__ = "0.1.0"
