"""The file order against JavaScript's localeCompare, recorded from Node 24 (ICU 78.3).

goldens/localecompare_node24.json: 1200 transcript names (seed 20261014: ASCII with mixed
case, digits, -, _ and .; UUIDs; accented Latin; CJK and kana), sorted by
``names.sort((a, b) => a.localeCompare(b))`` under Node v24.22.3.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from lcm_cli.engine.core import collation

GOLDEN = json.loads((Path(__file__).parent / "goldens" / "localecompare_node24.json").read_text("utf-8"))


def test_names_sort_as_node_24_sorts_them() -> None:
    names = list(GOLDEN["order"])
    random.Random(GOLDEN["seed"]).shuffle(names)
    assert sorted(names, key=collation.sort_key) == GOLDEN["order"]


def test_whole_paths_sort_as_the_names_do() -> None:
    paths = ["/s/agents/main/sessions/" + name for name in GOLDEN["order"]]
    assert sorted(reversed(paths), key=collation.sort_key) == paths


def test_the_ascii_fast_path_gives_the_full_collator_key() -> None:
    rng = random.Random(5)
    for _ in range(3000):
        text = "".join(chr(rng.randrange(128)) for _ in range(rng.randint(0, 10)))
        assert collation.sort_key(text) == collation._full_key(text), repr(text)
