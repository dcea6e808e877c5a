#!/usr/bin/env bash
# The kernel-change PR gate, one command: the fast suite (tests/cover) under the gate
# profile on every GPU (pytest -n auto, workers pinned across GPUs), then every mutant
# against it with the kill table (python -m properties.killtable). Exit 0 only when the
# suite passes and every mutant runnable on this device is killed. Uses the Python on PATH
# with PYTHONPATH=. (a GPU runner's own torch and triton); extra arguments go to pytest.
# Writes gate-suite.log and gate-kills.md into ${OUT:-.}.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-.}; mkdir -p "$OUT"
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
start=$(date +%s)
python -m pytest -n auto -p no:cacheprovider --hypothesis-profile=gate tests/cover "$@" > "$OUT/gate-suite.log" 2>&1
suite=$?
tail -3 "$OUT/gate-suite.log"
python -m properties.killtable --profile gate --workers "${GATE_MUTANT_WORKERS:-$(nproc)}" --report "$OUT/gate-kills.md" | head -3
kills=${PIPESTATUS[0]}
echo "gate: suite exit $suite, mutants exit $kills, wall $(( $(date +%s) - start )) s"
[ "$suite" -eq 0 ] && [ "$kills" -eq 0 ]
