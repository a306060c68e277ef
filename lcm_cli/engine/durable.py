"""What every durable file write in lcm shares: fsync a directory, hash a written file.

Files are replaced atomically (temp file, fsync, rename) and the rename itself is made
durable by fsyncing the directory that holds it; backups and prune archives are then
recorded with their size and SHA-256.
"""

from __future__ import annotations

import os

_HASH_CHUNK = 1 << 20


def fsync_dir(directory: str) -> None:
    """Make the entries of ``directory`` (a rename into it, say) durable."""
    fd = os.open(directory or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def hash_file(path: str, *, fsync: bool = False) -> tuple[int, str]:
    """(size, hex SHA-256) of ``path``; with ``fsync``, its data is flushed to disk first."""
    import hashlib  # not on the start-up path of the commands that only fsync

    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        if fsync:
            os.fsync(handle.fileno())
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()
