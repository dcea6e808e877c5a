#!/usr/bin/env bash
# README command 1: set up (idempotent) and run the verification sweep. Extra arguments go
# to `samplecheck sweep` (e.g. --device cuda --profile gate --report sweep.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/samplecheck sweep "$@"
