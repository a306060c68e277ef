"""Long output for a person goes through a pager, as git and gh do; never when piped.

``LCM_PAGER``, else ``PAGER``, else ``less`` (with ``LESS=FRX`` unless set: quit when it
fits, keep colours, leave the screen as it was). An empty value or ``cat`` turns paging off.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from typing import TextIO


def _terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def show(text: str, stream: TextIO) -> None:
    """Write ``text`` to ``stream``; on a terminal, through the pager when it is taller than the screen."""
    command = os.environ.get("LCM_PAGER", os.environ.get("PAGER", "less")).strip()
    rows = shutil.get_terminal_size().lines
    if not _terminal(stream) or not command or command == "cat" or text.count("\n") < rows - 1:
        stream.write(text)
        return
    stream.flush()
    env = {**os.environ, "LESS": os.environ.get("LESS", "FRX")}
    try:
        pager = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, env=env)  # to our terminal
    except (OSError, ValueError):  # no such pager: the text still reaches the person
        stream.write(text)
        return
    assert pager.stdin is not None
    try:
        pager.stdin.write(text.encode("utf-8", "replace"))
        pager.stdin.close()
    except BrokenPipeError:
        pass  # the person quit the pager before the end
    pager.wait()
