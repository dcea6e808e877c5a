"""Mutants of the min_p kernel."""

from kernels.mutants import Mutant

MUTANTS = (
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
)
