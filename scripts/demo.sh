#!/usr/bin/env bash
# Install lcm into ./.venv and run its main jobs on a copy of the bundled example state
# dir (never ~/.openclaw; the tracked example itself is never written).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q -e .
WORK="$(mktemp -d "${TMPDIR:-/tmp}/lcm-demo.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
cp -R examples/openclaw/. "$WORK/"
run() { echo "\$ lcm $*" >&2; .venv/bin/lcm --openclaw-dir "$WORK" "$@"; }

# Inspect: what is stored, and what the model would see.
run status --pretty
run conversations list --format table
run summaries show sum_2c3d4e5f60718293 --format table
# Keep: the host's turn arrives as JSON; lcm stores every message.
echo '{"role": "user", "content": "Did the flaky CI fix hold on main? See .github/workflows/ci.yml"}' \
  | run ingest --session-key agent:main:main --pretty
# Maintain: fold old messages into summaries (a dry run first, then for real).
run compact --session-key agent:main:main --manual --token-budget 400 --format table
run compact --session-key agent:main:main --manual --token-budget 400 --apply --pretty
run context show --session-key agent:main:main --token-budget 400 --format table
# Recall: nothing is lost; search it and expand a summary back to its messages.
run grep "flaky" --mode full_text --session-key agent:main:main --format table
run expand sum_2c3d4e5f60718293 --max-tokens 200 --pretty
# Backfill: two transcripts from before LCM was installed (one with an edited message,
# one cut short by a crash). A dry run first, then the import (after a backup), then proof.
run migrate-sessions --format table
run migrate-sessions --apply --format table
run migrate-sessions --verify --format table
# Keep it safe: an online backup with its manifest, re-checked.
BACKUP="$(run backup | .venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)["data"]["backupPath"])')"
run backup verify "$BACKUP" --format table
# Check: health of the whole database.
run doctor --format table
