"""Helpers for tests that kill or orphan processes."""

from __future__ import annotations


def process_gone(pid: int) -> bool:
    """True when ``pid`` has exited (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return any(line.startswith("State:") and "Z" in line for line in status)
    except OSError:
        return True
