#!/usr/bin/env bash
# The H200 session's batch. Step 1 (default): the PR gate (scripts/gate.sh: suite + kill
# table) on GPU 0 alone. Step 2 (STEP=2): the sweep on every visible GPU (the multi-GPU
# run), the bf16-vs-fp32 behaviour report and the benchmark. Logs land in ${OUT:-out}/.
# FlashInfer comes from .carry/ when present (../shared/device/flashinfer-carry.sh).
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
[ -f .carry/flashinfer-env.sh ] && source .carry/flashinfer-env.sh && export PYTHONPATH=.:$PYTHONPATH
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python -c 'import torch, triton, hypothesis, scipy; print("torch", torch.__version__, "triton", triton.__version__, "hypothesis", hypothesis.__version__, "scipy", scipy.__version__, "GPUs", torch.cuda.device_count())'
  python -c 'import flashinfer; print("flashinfer", flashinfer.__version__)' 2>&1 | tail -1; } > "$OUT/gpu.txt"
if [ "${STEP:-1}" = 1 ]; then
  start=$(date +%s)
  CUDA_VISIBLE_DEVICES=0 OUT="$OUT" timeout 560 bash scripts/gate.sh --durations=25 > "$OUT/gate.log" 2>&1
  echo "gate (1 GPU) exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/gpu.txt"
else
  start=$(date +%s)
  timeout 300 python -m properties.sweep --device cuda --profile gate --report "$OUT/sweep.md" > "$OUT/sweep.log" 2>&1
  echo "sweep ($(python -c 'import torch; print(torch.cuda.device_count())') GPUs) exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/gpu.txt"
  timeout 150 python -m properties.behaviour --device cuda --report "$OUT/behaviour.md" > "$OUT/behaviour.log" 2>&1
  echo "behaviour exit $?" >> "$OUT/gpu.txt"
  timeout 100 python bench/bench_top_k_top_p.py --out "$OUT/bench.md" > "$OUT/bench.log" 2>&1
  echo "bench exit $?" >> "$OUT/gpu.txt"
fi
cat "$OUT/gpu.txt"
