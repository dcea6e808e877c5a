"""Deliberately broken copies of our kernels, each reproducing a real bug.

A mutant is a source patch (find -> replace, `find` must occur exactly once) of one
kernel module. The patched module is written to a temporary file and imported from
there, so Triton's JIT (which reads function source) compiles it on a GPU and the
interpreter runs it on CPU. `kernels.mutants:<name>` resolves to the mutant's entry
point, so a mutant plugs into the registry like any backend (`pytest --mutant=<name>`).
"""

import functools
import importlib
import importlib.util
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mutant:
    name: str
    kernel: str  # registry record it is a backend of
    module: str
    entry: str
    find: str
    replace: str
    description: str
    ref: str
    devices: tuple[str, ...] = ("cpu", "cuda")  # where the patch changes behaviour

    def patched_source(self) -> str:
        source = Path(importlib.util.find_spec(self.module).origin).read_text()
        count = source.count(self.find)
        if count != 1:
            raise ValueError(f"mutant {self.name}: patch target occurs {count} times in {self.module}, expected 1")
        return source.replace(self.find, self.replace)


MUTANTS = {m.name: m for m in (
    Mutant(
        name="triton_row_stride_ignored", kernel="top_k_top_p",
        module="kernels.top_k_top_p", entry="apply_top_k_top_p",
        find="row_ptr = logits_ptr + row * row_stride", replace="row_ptr = logits_ptr + row * V",
        description="rows addressed as row * V, ignoring stride(0) (padded vocab views read the wrong row)",
        ref="vllm#42684, fixed by vllm#42739",
    ),
    Mutant(
        name="torch_softmax_in_bf16", kernel="top_k_top_p",
        module="kernels.top_k_top_p_torch", entry="apply_top_k_top_p_torch",
        find="survivors.softmax(dim=-1, dtype=torch.float32)", replace="survivors.softmax(dim=-1)",
        description="top-p softmax and cumulative mass accumulated in the logits' dtype (bf16)",
        ref="vllm#48641 (the fix upcasts the top-p fallback's softmax)",
    ),
    Mutant(
        name="torch_top_p_one_extra_token", kernel="top_k_top_p",
        module="kernels.top_k_top_p_torch", entry="apply_top_k_top_p_torch",
        find="last = ((mass_before < p[:, None]).sum(dim=-1, keepdim=True) - 1).clamp(min=0)",
        replace="last = (mass_before < p[:, None]).sum(dim=-1, keepdim=True).clamp(max=vocab - 1)",
        description="top-p cut one sorted position too low: keeps one token past the crossing token",
        ref="off-by-one at the top-p boundary (cf. fi#2202, the opposite direction)",
    ),
    Mutant(
        name="min_p_threshold_inclusive", kernel="min_p",
        module="kernels.min_p", entry="apply_min_p",
        find="mask=in_row & (x < threshold))", replace="mask=in_row & (x <= threshold))",
        description="min_p masks entries equal to the threshold: min_p = 1 drops the maximum itself",
        ref="relational flip at the min_p threshold (vLLM MRV2 _min_p_kernel keeps l >= max + log(min_p))",
    ),
    Mutant(
        name="min_p_row0_parameter", kernel="min_p",
        module="kernels.min_p", entry="apply_min_p",
        find="min_p = tl.load(min_p_ptr + row).to(tl.float32)", replace="min_p = tl.load(min_p_ptr).to(tl.float32)",
        description="per-row min_p read from row 0 for every row",
        ref="fault class: per-row parameters read from row 0 (issue 5)",
    ),
    Mutant(
        name="temperature_approximate_division", kernel="temperature",
        module="kernels.temperature", entry="apply_temperature",
        find="scaled = tl.math.div_rn(x, tl.broadcast_to(t, [BLOCK]))", replace="scaled = x / t",
        description="Triton's plain `/` (approximate division on NVIDIA GPUs) instead of IEEE div_rn",
        ref="found while building the temperature kernel (docs/findings.md F2); GPU-only",
        devices=("cuda",),
    ),
)}


@functools.cache
def load(name: str):
    """The mutant's entry point, from its patched module."""
    mutant = MUTANTS[name]
    path = Path(tempfile.mkdtemp(prefix="samplecheck-mutant-")) / f"{mutant.name}.py"
    path.write_text(mutant.patched_source())
    spec = importlib.util.spec_from_file_location(f"samplecheck_mutant_{mutant.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, mutant.entry)


def __getattr__(name: str):
    if name in MUTANTS:
        return load(name)
    raise AttributeError(name)
