#!/usr/bin/env bash
# The H200 session's batch: the full suite with pytest -n auto (gate profile), the sweep
# report, and the benchmark. Logs land in ${OUT:-out}/. Run from the repo root with
# PYTHONPATH=. (nothing is installed on the GPU machine).
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
python -c 'import torch, triton, hypothesis, scipy; print("torch", torch.__version__, "triton", triton.__version__, "hypothesis", hypothesis.__version__, "scipy", scipy.__version__)' >> "$OUT/gpu.txt"
start=$(date +%s)
timeout 330 python -m pytest -n auto -p no:cacheprovider --hypothesis-profile=gate --device=cuda tests \
  --durations=15 > "$OUT/suite.log" 2>&1
echo "suite exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/gpu.txt"
timeout 100 python bench/bench_top_k_top_p.py --out "$OUT/bench.md" > "$OUT/bench.log" 2>&1
echo "bench exit $?" >> "$OUT/gpu.txt"
start=$(date +%s)
timeout 120 python -m properties.sweep --device cuda --profile ci --report "$OUT/sweep.md" > "$OUT/sweep.log" 2>&1
echo "sweep exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/gpu.txt"
cat "$OUT/gpu.txt"; tail -5 "$OUT/suite.log"; cat "$OUT/bench.md"
