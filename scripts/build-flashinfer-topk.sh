#!/usr/bin/env bash
# Builds FlashInfer's `topk` JIT module (sm_90a, for the H200) on this CPU machine and puts it
# into .carry/aot/topk/topk.so, where .carry/flashinfer-env.sh installs it on the GPU machine.
# The carried wheel does not prebuild it (../shared/device/flashinfer-carry.sh), and it compiles
# for longer than one device call may run; FlashInfer needs it for the top_k_first fast path
# (an int top_k, or a top_k_max bound, <= 256 at V >= 65536), probed by the `fast_path` section
# of `python -m properties.backends.flashinfer_leads_probe`.
# Needs: .carry/ from flashinfer-carry.sh, nvcc 13.0 (/usr/local/cuda), ninja, .venv, and pip
# access for the pieces this machine lacks: curand headers (nvidia-curand), apache-tvm-ffi for
# this Python, and FlashInfer's import-time dependencies. Took ~30 min on 2 cores (2026-11-30).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f .carry/flashinfer_python-0.7.4-slim.zip ] || { echo "run ../shared/device/flashinfer-carry.sh first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pip() { .venv/bin/python -m pip -q "$@"; }
pip download --no-deps --only-binary=:all: -d "$work/wheels" nvidia-curand "apache-tvm-ffi==0.1.15.post2"
pip install --target "$work/deps" requests click einops tabulate tqdm nvidia-ml-py packaging ninja
mkdir "$work/site"
.venv/bin/python -m zipfile -e .carry/flashinfer_python-0.7.4-slim.zip "$work/site"
for w in "$work"/wheels/*.whl; do .venv/bin/python -m zipfile -e "$w" "$work/site"; done
CPATH="$work/site/nvidia/cu13/include" FLASHINFER_CUDA_ARCH_LIST=9.0 FLASHINFER_WORKSPACE_BASE="$work/ws" \
  PYTHONPATH="$work/site:$work/deps" MAX_JOBS="$(nproc)" .venv/bin/python - <<'PY'
import shutil
from pathlib import Path
from flashinfer.jit.topk import gen_topk_module

spec = gen_topk_module()
spec.build(verbose=True)
out = Path(".carry/aot/topk")
out.mkdir(parents=True, exist_ok=True)
shutil.copy(spec.jit_library_path, out / "topk.so")
print("built", out / "topk.so", spec.jit_library_path.stat().st_size, "bytes")
PY
