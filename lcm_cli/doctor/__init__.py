"""Checks, repairs and cleaners for lcm.db (a later issue)."""
