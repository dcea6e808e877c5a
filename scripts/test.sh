#!/usr/bin/env bash
# README command 2: set up (idempotent) and run the test suite on all cores, then list its 25
# slowest tests (the CPU suite's budget is 15 minutes). Extra arguments go to pytest (default
# profile: ci, the derandomized CPU-sized one).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -n auto --dist worksteal -p no:cacheprovider --sc-profile=ci --durations=25 "$@"
