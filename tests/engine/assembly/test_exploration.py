"""Exploration summaries: the text lossless-claw 0.15.3 writes for each content class.

The expected strings were copied by hand from the reference's own summarizer run on the same
inputs when this was written; that run is not kept, so they cannot be re-checked here. The
recorded check is tests/compat/test_engine_goldens.py: the ``large-payloads`` golden's stored
and assembled messages hold the reference's exploration summaries of its own inputs. The
summary is stored in the message and read by the model, so it must be the same text,
counted in UTF-16 units and grouped en-US.
"""

from __future__ import annotations

import pytest

from lcm_cli.engine.assembly.exploration import exploration_summary, summarize_image

CASES = [
    (
        '{"b": 1, "10": [1, {"x": null}, "s", true], "a": {"n": {"deep": 1}}, "z": null}',
        "data.json",
        "application/json",
        "Structured summary (JSON):\nTop-level type: object.\nShape: object(keys=4: 10, b, a, z).",
    ),
    (
        "name, age ,city\n\nAda,36,London\r\nGrace,85,NY\n",
        "people.csv",
        "text/csv",
        "Structured summary (CSV):\nRows: 2.\nColumns (3): name, age, city.\nFirst row sample: Ada,36,London.",
    ),
    (
        "a\tb\tc\n1\t2\t3",
        "t.tsv",
        None,
        "Structured summary (TSV):\nRows: 1.\nColumns (3): a, b, c.\nFirst row sample: 1 2 3.",
    ),
    (
        "<root a='1'><child>x</child><other/><child2 b>y</child2></root>",
        "doc.xml",
        None,
        "Structured summary (XML):\nRoot element: root.\nChild elements seen: child, child2.",
    ),
    (
        "name: x\nversion: 2 # c\nnested:\n  inner: 1\nlist:\n- a\nname:\n",
        "c.yaml",
        None,
        "Structured summary (YAML):\nTop-level keys (3): nested, list, name.",
    ),
    (
        "line one\nline two",
        "x.ndjson.txt",
        "application/x-ndjson",
        "Structured summary:\nCharacters: 17.\nLines: 2.",
    ),
    (
        "import os\nfrom a.b import c\nconst fs = require('fs')\n\ndef main():\n    pass\nclass Foo:\n  def method(self): pass\nexport async function go() {}\nstruct Point {\n",
        "m.py",
        "text/x-python",
        "Code exploration summary (m.py):\nLines: 11.\nImports/dependencies (3): import os | from a.b import c | const fs = require('fs').\nTop-level definitions (5): def main(): | class Foo: | def method(self): pass | export async function go() {} | struct Point {.",
    ),
    (
        "# Title\n\nSOME HEADER LINE\nAB\nplain text here\n## Section  two\n   \n",
        "notes.md",
        "text/markdown",
        "Text exploration summary (notes.md):\nCharacters: 65.\nWords: 12.\nLines: 8.\nDetected section headers: # Title | SOME HEADER LINE | ## Section two.\nOpening excerpt: # Title SOME HEADER LINE AB plain text here ## Section two.\nClosing excerpt: # Title SOME HEADER LINE AB plain text here ## Section two.",
    ),
    (
        "héllo wörld 🚀 ",
        "x.txt",
        "text/plain",
        "Text exploration summary (x.txt):\nCharacters: 15.\nWords: 3.\nLines: 1.\nDetected section headers: none detected.\nOpening excerpt: héllo wörld 🚀.\nClosing excerpt: héllo wörld 🚀.",
    ),
    (
        "  spaced\xa0out\ufefftext\u2028more  ",
        "s.txt",
        "text/plain",
        "Text exploration summary (s.txt):\nCharacters: 24.\nWords: 4.\nLines: 1.\nDetected section headers: none detected.\nOpening excerpt: spaced out text more.\nClosing excerpt: spaced out text more.",
    ),
]


@pytest.mark.parametrize(("content", "name", "mime", "expected"), CASES)
def test_summary_is_the_references_text(
    content: str, name: str | None, mime: str | None, expected: str
) -> None:
    assert exploration_summary(content, name, mime) == expected


def test_a_cut_through_an_emoji_is_stored_as_a_replacement_character() -> None:
    text = "a" * 499 + "\U0001f680" + " middle" * 10
    opening = exploration_summary(text, "t.txt", "text/plain").split("\n")[5]
    assert opening == "Opening excerpt: " + "a" * 499 + "\ufffd."


def test_image_summary_names_extension_size_and_file() -> None:
    assert summarize_image(1234, "jpg", "user-image.jpg") == "Image file (JPG, 1,234 bytes) — user-image.jpg"
