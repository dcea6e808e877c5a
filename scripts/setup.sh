#!/usr/bin/env bash
# Creates .venv (once) and installs the project in the order that keeps torch a CPU build:
# torch==2.13.0 first (the CPU wheel), then triton, then the project (pytest and pytest-xdist among its dependencies), then
# transformers (5.x from 5.24, the releases the transformers pack calls).
# On a machine with CUDA torch already installed, set SAMPLECHECK_SYSTEM_SITE=1 to reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  if [ "${SAMPLECHECK_SYSTEM_SITE:-0}" = 1 ]; then
    "$PYTHON" -m venv --system-site-packages .venv
  else
    "$PYTHON" -m venv .venv
  fi
fi
pip() { .venv/bin/python -m pip -q --disable-pip-version-check "$@"; }
.venv/bin/python -c 'import torch' 2>/dev/null || pip install "torch==2.13.0"
.venv/bin/python -c 'import triton' 2>/dev/null || pip install "triton==3.9.0"
pip install -e '.[report]'
# Hugging Face transformers for its pack (samplecheck.backends.transformers); it does not depend on torch.
pip install "transformers>=5.24,<6"
