#!/usr/bin/env bash
# Install lcm into ./.venv and run it on the bundled example state dir (never ~/.openclaw).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q -e .
EXAMPLE=examples/openclaw
run() { echo "\$ lcm $*" >&2; .venv/bin/lcm --openclaw-dir "$EXAMPLE" --db "$EXAMPLE/lcm.db" --config "$EXAMPLE/openclaw.json" "$@"; }
run status --pretty
run conversations list --format table
run messages tail --session-key agent:main:main --count 3 --pretty
run summaries show sum_2c3d4e5f60718293 --format table
