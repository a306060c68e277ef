"""Keeping lcm.db healthy and small: backup, prune, rotate, control, and the junk-class rules."""
