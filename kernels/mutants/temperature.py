"""Mutants of the temperature kernel."""

from kernels.mutants import Mutant

MUTANTS = (
    Mutant(
        name="temperature_approximate_division", kernel="temperature",
        module="kernels.temperature", entry="apply_temperature",
        find="scaled = tl.math.div_rn(x, tl.broadcast_to(t, [BLOCK]))", replace="scaled = x / t",
        description="Triton's plain `/` (approximate division on NVIDIA GPUs) instead of IEEE div_rn",
        ref="found while building the temperature kernel (docs/findings.md F2); GPU-only",
        devices=("cuda",),
    ),
)
