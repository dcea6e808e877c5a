"""Mutants of the min_p kernel."""

from samplecheck.mutants import Mutant

MUTANTS = (
    Mutant(
        name="min_p_threshold_inclusive", kernel="min_p",
        module="samplecheck.kernels.min_p", entry="apply_min_p",
        find="(x < threshold) | (x != x)", replace="(x <= threshold) | (x != x)",
        description="min_p masks entries equal to the threshold: min_p = 1 drops the maximum itself",
        ref="relational flip at the min_p threshold (vLLM MRV2 _min_p_kernel keeps l >= max + log(min_p))",
    ),
    Mutant(
        name="min_p_row0_parameter", kernel="min_p",
        module="samplecheck.kernels.min_p", entry="apply_min_p",
        find="min_p = tl.load(min_p_ptr + row).to(tl.float32)", replace="min_p = tl.load(min_p_ptr).to(tl.float32)",
        description="per-row min_p read from row 0 for every row",
        ref="fault class: per-row parameters read from row 0 (issue 5)",
    ),
    Mutant(
        name="min_p_threshold_in_logit_space", kernel="min_p",
        module="samplecheck.kernels.min_p", entry="apply_min_p",
        find="threshold = row_max + log_min_p", replace="threshold = row_max * min_p",
        description="threshold min_p * max(l) on logits instead of max(l) + log(min_p) (p >= min_p * p_max)",
        ref="fault class: a threshold in logit space instead of probability space (issue 5)",
    ),
    Mutant(
        name="min_p_last_partial_block_skipped", kernel="min_p",
        module="samplecheck.kernels.min_p", entry="apply_min_p",
        find="in_row = idx < hi\n", replace="in_row = idx < hi // BLOCK * BLOCK\n",
        description="the masking pass stops at the last full block: the tail of the row is never masked",
        ref="fault class: a wrong last partial block (issue 5)",
    ),
)
