#!/usr/bin/env bash
# README command 1: set up (idempotent), then run the verification sweep: the properties that
# judge backends, on every cell that runs on this device (profile ci on CPU, gate on a GPU).
# The screen shows a progress line, then the report; pytest's own output goes to the log whose
# path is printed first. Extra arguments go to `samplecheck sweep` (e.g. --device cuda,
# --report sweep.md, --log sweep.log, -- <pytest args>).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/samplecheck sweep "$@"
