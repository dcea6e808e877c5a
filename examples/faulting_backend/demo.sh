#!/usr/bin/env bash
# Fault isolation on a GPU: the suite's exact properties with and without the faulting plug-in.
# Done when the second run shows exactly one more failure than the first (the faulting test,
# reported with "kernel fault: this test left the CUDA context poisoned"), and the same
# number of passes plus the plug-in's other tests.
set -u
cd "$(dirname "$0")/../.."
FILES="tests/cover/test_oracle_equivalence.py tests/cover/test_row_isolation.py tests/cover/test_strided_bitwise.py tests/cover/test_error_inputs.py"
OPTS="-n ${WORKERS:-4} -p no:cacheprovider --sc-device=cuda --sc-profile=ci -q"
python -m pytest $FILES $OPTS > /tmp/faulting-baseline.log 2>&1
FAULTING_BACKEND_STATE=$(mktemp -u) PYTHONPATH=examples/faulting_backend${PYTHONPATH:+:$PYTHONPATH} \
    python -m pytest $FILES $OPTS --sc-backend top_k_top_p=faulting_backend:apply_top_k_top_p > /tmp/faulting-demo.log 2>&1
echo "baseline: $(tail -1 /tmp/faulting-baseline.log)"
echo "faulting: $(tail -1 /tmp/faulting-demo.log)"
grep -E "^FAILED|crashed while running|kernel fault" /tmp/faulting-demo.log | head -20
