#!/usr/bin/env bash
# The H200 session's batch, by STEP (logs land in ${OUT:-out}/; each step starts from an
# empty Triton cache, so its wall time includes every JIT compile, as on a fresh runner):
#   1 (default): the PR gate (scripts/gate.sh: suite + kill table) on GPU 0 alone with
#                ${GATE_WORKERS:-16} xdist workers (one H200 machine's cores), then the
#                FlashInfer top-p probe (finding F6);
#   2: the gate's suite on every visible GPU, pytest -n auto (the multi-GPU comparison);
#   3: the sweep, the bf16-vs-fp32 behaviour report and the benchmark.
# FlashInfer comes from .carry/ when present (../shared/device/flashinfer-carry.sh).
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
[ -f .carry/flashinfer-env.sh ] && source .carry/flashinfer-env.sh && export PYTHONPATH=.:$PYTHONPATH
export TRITON_CACHE_DIR; TRITON_CACHE_DIR=$(mktemp -d)
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python -c 'import torch, triton, hypothesis, scipy; print("torch", torch.__version__, "triton", triton.__version__, "hypothesis", hypothesis.__version__, "scipy", scipy.__version__, "GPUs", torch.cuda.device_count())'
  python -c 'import flashinfer; print("flashinfer", flashinfer.__version__)' 2>&1 | tail -1
  echo "CPU cores $(nproc)"; } > "$OUT/gpu.txt"
start=$(date +%s)
case "${STEP:-1}" in
1)
  CUDA_VISIBLE_DEVICES=0 OUT="$OUT" timeout -s INT -k 20 "${GATE_LIMIT:-420}" bash scripts/gate.sh \
    -n "${GATE_WORKERS:-16}" --durations=30 -rfE --tb=short > "$OUT/gate.log" 2>&1
  echo "gate (1 GPU, ${GATE_WORKERS:-16} workers) exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/gpu.txt"
  timeout 60 python -m properties.backends.flashinfer_top_p_probe > "$OUT/top-p-probe.md" 2>&1
  echo "top-p probe exit $?" >> "$OUT/gpu.txt" ;;
2)
  timeout -s INT -k 20 "${SUITE_LIMIT:-300}" python -m pytest -n auto -p no:cacheprovider --device=cuda \
    --hypothesis-profile=gate tests/cover -q -rfE --tb=short > "$OUT/suite.log" 2>&1
  echo "gate suite ($(python -c 'import torch; print(torch.cuda.device_count())') GPUs, -n auto) exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/gpu.txt" ;;
3)
  timeout 300 python -m properties.sweep --device cuda --profile gate --report "$OUT/sweep.md" > "$OUT/sweep.log" 2>&1
  echo "sweep exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/gpu.txt"
  timeout 150 python -m properties.behaviour --device cuda --report "$OUT/behaviour.md" > "$OUT/behaviour.log" 2>&1
  echo "behaviour exit $?" >> "$OUT/gpu.txt"
  timeout 100 python bench/bench_top_k_top_p.py --out "$OUT/bench.md" > "$OUT/bench.log" 2>&1
  echo "bench exit $?" >> "$OUT/gpu.txt" ;;
esac
cat "$OUT/gpu.txt"
