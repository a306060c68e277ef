"""Backups of lcm.db: full copies and change backups, their names, manifests, catalog,
verification, restore and undo, and the `lcm backup` operations (``ops``)."""
