"""Mutants of the top_k_top_p kernel."""

from kernels.mutants import Mutant

MUTANTS = (
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
)
