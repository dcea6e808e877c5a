#!/usr/bin/env bash
# The kernel-change PR gate on a GPU runner, one command: `samplecheck gate` (the fast suite
# under the gate profile on every GPU, workers pinned across GPUs, then every mutant against it
# with the kill table). Exit 0 only when the suite passes and every mutant runnable on this
# device is killed. Installs this checkout into the runner's own Python first (its CUDA torch
# and triton stay), without build isolation (GPU runners may have no package index). Writes
# gate-suite.log and gate-kills.md into ${OUT:-.}; extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --no-deps --no-build-isolation -e . || exit 1
exec samplecheck gate --out "${OUT:-.}" --mutant-workers "${GATE_MUTANT_WORKERS:-$(nproc)}" "$@"
