"""Where the vLLM pack finds vLLM, and the per-request state its Model Runner V2 kernels read.

Source, in this order:
1. the folder named by SAMPLECHECK_VLLM_KERNELS (vLLM's kernel files vendored as a test
   subject, `../shared/external/vllm_kernels/` layout: `v1_topk_topp_triton.py`, ...),
   imported as the package `samplecheck_vllm_kernels` (an explicit pointer wins, so a
   deliberately edited copy can be tested beside an installed vLLM);
2. the installed `vllm` package (the same modules at their vLLM paths);
3. neither: `unavailable()` says why, and the pack is not plugged (the pytest header says so).

Nothing is imported before the first call (Triton must see TRITON_INTERPRET=1 on CPU first).
"""

import importlib
import importlib.util
import os
import sys
from pathlib import Path

import torch

ENV = "SAMPLECHECK_VLLM_KERNELS"
PACKAGE = "samplecheck_vllm_kernels"
# vendored file -> vLLM module (upstream commit 52a31cc layout)
MODULES = {
    "v1_topk_topp_triton": "vllm.v1.sample.ops.topk_topp_triton",
    "v1_topk_topp_sampler": "vllm.v1.sample.ops.topk_topp_sampler",
    "v1_penalties": "vllm.v1.sample.ops.penalties",
    "v1_bad_words": "vllm.v1.sample.ops.bad_words",
    "mrv2_gumbel": "vllm.v1.worker.gpu.sample.gumbel",
    "mrv2_min_p": "vllm.v1.worker.gpu.sample.min_p",
    "mrv2_logit_bias": "vllm.v1.worker.gpu.sample.logit_bias",
    "mrv2_penalties": "vllm.v1.worker.gpu.sample.penalties",
    "mrv2_bad_words": "vllm.v1.worker.gpu.sample.bad_words",
    "mrv2_logprob": "vllm.v1.worker.gpu.sample.logprob",
}


def folder() -> Path | None:
    value = os.environ.get(ENV)
    return Path(value) if value else None


def unavailable() -> str | None:
    """None when a vLLM source is there, else the reason the pack is not tested."""
    where = folder()
    if where is not None:
        missing = [f"{name}.py" for name in MODULES if not (where / f"{name}.py").is_file()]
        return f"{ENV}={where} lacks {', '.join(missing)}" if missing else None
    if importlib.util.find_spec("vllm") is not None:
        return None
    return (f"vLLM pack: neither the vllm package is installed nor {ENV} points at vLLM's vendored "
            f"kernels (e.g. {ENV}=../shared/external/vllm_kernels)")


def module(name: str):
    """vLLM's module for vendored file `name` (module docstring: which source)."""
    where = folder()
    if where is None:
        return importlib.import_module(MODULES[name])
    if PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(PACKAGE, where / "__init__.py",
                                                      submodule_search_locations=[str(where)])
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{PACKAGE}.{name}")


# --- Model Runner V2 request state ------------------------------------------------------------
# MRV2 kernels read per-request state through `expanded_idx_mapping` (batch row -> request
# slot). The slots are permuted (reversed, offset by SLOT_OFFSET, with unused slots around
# them) so that a kernel indexing state by batch row reads another request's (poisoned) state.
SLOT_OFFSET = 2


def slots(batch: int, device) -> torch.Tensor:
    """int32 [batch]: the request slot of each row."""
    return torch.arange(batch - 1, -1, -1, dtype=torch.int32, device=device) + SLOT_OFFSET


def max_requests(batch: int) -> int:
    return batch + SLOT_OFFSET + 1


def per_request(values: torch.Tensor, slot: torch.Tensor, fill) -> torch.Tensor:
    """[max_requests, ...]: values[i] at slot[i], `fill` in every other slot."""
    state = torch.full((max_requests(values.size(0)),) + tuple(values.shape[1:]), fill, dtype=values.dtype,
                       device=values.device)
    state[slot.long()] = values
    return state


def prefixes(ids: torch.Tensor) -> list[list[int]]:
    """Each row's ids before its first -1 (our padded id lists)."""
    rows = []
    for row in ids.tolist():
        rows.append(row[:row.index(-1)] if -1 in row else row)
    return rows


def padded(rows: list[list[int]], width: int, fill: int, dtype, device) -> torch.Tensor:
    out = torch.full((len(rows), max(width, 1)), fill, dtype=dtype)
    for i, row in enumerate(rows):
        out[i, :len(row)] = torch.tensor(row, dtype=dtype)
    return out.to(device)
