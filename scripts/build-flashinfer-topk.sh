#!/usr/bin/env bash
# Builds FlashInfer's `topk` JIT module (sm_90a, for the H200) on this CPU machine and writes it
# to ${1:-.carry/aot/topk/topk.so}, where .carry/flashinfer-env.sh installs it on the GPU machine.
# The carried wheel does not prebuild it (../shared/device/flashinfer-carry.sh), and it compiles
# for longer than one device call may run; FlashInfer needs it for the top_k_first fast path
# (an int top_k, or a top_k_max bound, <= 256 at V >= 65536), probed by the `fast_path` section
# of `python -m samplecheck.probes.flashinfer_leads`.
# Needs: .carry/ from flashinfer-carry.sh, nvcc 13.0 (/usr/local/cuda), ninja, .venv, and pip
# access for the pieces this machine lacks: curand headers (nvidia-curand), apache-tvm-ffi for
# this Python, and FlashInfer's import-time dependencies. The link finds libcudart in
# /usr/local/cuda/lib64 and an empty stand-in for the driver's libcuda.so.1 (the module calls
# none of it; the GPU machine has the real one). A clean run took 1870 s on this 2-core machine
# (2026-11-30; cub_topk.cu alone ~25 min in cicc and ptxas); 15.6 MB, which keeps .carry/ under
# the 64 MiB carry.
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
mkdir "$work/stubs"
echo "" | gcc -shared -x c - -Wl,-soname,libcuda.so.1 -o "$work/stubs/libcuda.so"
CPATH="$work/site/nvidia/cu13/include" LIBRARY_PATH="$work/stubs:/usr/local/cuda/lib64" \
  FLASHINFER_CUDA_ARCH_LIST=9.0 FLASHINFER_WORKSPACE_BASE="$work/ws" \
  PYTHONPATH="$work/site:$work/deps" MAX_JOBS="$(nproc)" .venv/bin/python - "${1:-.carry/aot/topk/topk.so}" <<'PY'
import shutil
import sys
from pathlib import Path
from flashinfer.jit.topk import gen_topk_module

spec = gen_topk_module()
spec.build(verbose=True)
out = Path(sys.argv[1])
out.parent.mkdir(parents=True, exist_ok=True)
shutil.copy(spec.jit_library_path, out)
print("built", out, out.stat().st_size, "bytes")
PY
