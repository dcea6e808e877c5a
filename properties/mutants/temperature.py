"""Mutants of the temperature kernel."""

from samplecheck.mutants import Mutant

MUTANTS = (
    Mutant(
        name="temperature_approximate_division", kernel="temperature",
        module="samplecheck.kernels.temperature", entry="apply_temperature",
        find="scaled = tl.math.div_rn(x, tl.broadcast_to(t, [BLOCK]))", replace="scaled = x / t",
        description="Triton's plain `/` (approximate division on NVIDIA GPUs) instead of IEEE div_rn",
        ref="found while building the temperature kernel (docs/findings.md F2); on the CPU it shows only under a "
            "GPU's division (test_oracle_equivalence_under_gpu_math)",
    ),
    Mutant(
        name="temperature_contiguous_copy", kernel="temperature",
        module="samplecheck.kernels.temperature", entry="apply_temperature",
        find="    flag = guard.settle(in_kernel=launched)  # else the checks are launched on their own\n",
        replace="    flag = guard.settle(in_kernel=launched)  # else the checks are launched on their own\n"
                "    logits = logits.contiguous()\n",
        description="the wrapper makes strided logits contiguous: the scaling lands in a copy, the view is unchanged",
        ref="seed: a strided view sent to a contiguous-only kernel (cf. vllm#19754, fi#1866: bf16 slices silently copied)",
    ),
    Mutant(
        name="temperature_greedy_rows_divided", kernel="temperature",
        module="samplecheck.kernels.temperature", entry="apply_temperature",
        find="if (t != 0.0) & (t != 1.0) & clear:", replace="if (t != 1.0) & clear:",
        description="greedy rows (T = 0) divided by zero instead of left unchanged",
        ref="vLLM guards T < eps with divisor 1.0 (sampler.py); fault class: missing edge guard",
    ),
)
