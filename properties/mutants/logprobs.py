"""Mutants of the logprobs kernel."""

from samplecheck.mutants import Mutant
from samplecheck.registry import catalog

# The top-k ids' merge (`samplecheck.kernels.chunk_codes`), reached through the logprobs kernels.
_TOP_IDS = dict(kernel="logprobs", module="samplecheck.kernels.chunk_codes", via=("samplecheck.kernels.logprobs",),
                entry="compute_logprobs")

MUTANTS = (
    Mutant(
        name="logprobs_single_gather_tile", kernel="logprobs",
        module="samplecheck.kernels.logprobs", entry="compute_logprobs",
        find="_gather_kernel[(batch, cdiv(n_cols, gather_block))]",
        replace="_gather_kernel[(batch, 1)]",
        description="the gather is one tile of GATHER_BLOCK (<= 1024) lanes: columns past it are never "
                    "written (num_logprobs = -1 or k >= GATHER_BLOCK return garbage there)",
        ref="vllm#46746: MRV2 _topk_log_softmax_kernel sized its gather tile next_pow2(n + 1); "
            "a tile capped without a loop over the columns",
    ),
    Mutant(
        name="logprobs_rank_strict", kernel="logprobs",
        module="samplecheck.kernels.logprobs", entry="compute_logprobs",
        find="(x >= sampled_value)", replace="(x > sampled_value)",
        description="rank counts x > x_sampled: 0-based, and ties no longer count against the sampled token",
        ref="relational flip (vLLM V1 batched_count_greater_than and MRV2 _ranks_kernel use >=)",
    ),
    Mutant(
        name="logprobs_first_block_max", kernel="logprobs",
        module="samplecheck.kernels.logprobs", entry="compute_logprobs",
        find='lane_max = tl.full([BLOCK], float("-inf"), tl.float32)\n    for start in range(lo, hi, BLOCK):',
        replace='lane_max = tl.full([BLOCK], float("-inf"), tl.float32)\n    for start in range(lo, tl.minimum(hi, BLOCK), BLOCK):',
        description="log-softmax shifted by the max of the first 1024 entries only: exp(l - m) overflows "
                    "when the row max lies further on (and is NaN when the first block is all -inf)",
        ref="fault class: a reduction pass that stops after the first block (wide rows, V > BLOCK)",
    ),
    Mutant(
        name="logprobs_sampled_column_skipped", kernel="logprobs",
        module="samplecheck.kernels.logprobs", entry="compute_logprobs",
        find="in_cols = cols < n_cols", replace="in_cols = (cols >= 1) & (cols < n_cols)",
        description="logprobs gathered for the top-k columns only: the sampled token's column is never written",
        ref="fault class: gather over the top-k ids without the sampled token (vLLM gathers [sampled, top-k])",
    ),
    Mutant(
        name="logprobs_low_precision_sum", kernel="logprobs",
        module="samplecheck.kernels.logprobs", entry="compute_logprobs",
        find=("    lane_sum = tl.zeros([BLOCK], tl.float32)\n"
              "    lane_rank = tl.zeros([BLOCK], tl.int32)\n"
              "    for start in range(lo, hi, BLOCK):\n"
              "        cols = start + offs\n"
              "        in_row = cols < hi\n"
              "        x = to_fp32(tl.load(row_ptr + cols, mask=in_row, other=float(\"-inf\")))\n"
              "        lane_sum += tl.exp(x - row_max)\n"
              "        lane_rank += (in_row & (x >= sampled_value)).to(tl.int32)\n"
              "    tl.store(sums_ptr + row * splits + split, tl.sum(lane_sum, axis=0))\n"),
        replace=("    lane_sum = tl.zeros([BLOCK], logits_ptr.dtype.element_ty)\n"
                 "    lane_rank = tl.zeros([BLOCK], tl.int32)\n"
                 "    for start in range(lo, hi, BLOCK):\n"
                 "        cols = start + offs\n"
                 "        in_row = cols < hi\n"
                 "        x = tl.load(row_ptr + cols, mask=in_row, other=float(\"-inf\"))\n"
                 "        lane_sum += tl.exp(x - row_max).to(logits_ptr.dtype.element_ty)\n"
                 "        lane_rank += (in_row & (x >= sampled_value)).to(tl.int32)\n"
                 "    tl.store(sums_ptr + row * splits + split, tl.sum(lane_sum, axis=0).to(tl.float32))\n"),
        description="bf16/fp16 loads not upcast and the sum of exp accumulated in the logits' dtype "
                    "(8 or 11 significand bits: the log-sum-exp is off by ~1e-3; fp32 logits are unaffected)",
        ref="#48641 (dtype-preserving chain) / interpreter gotcha: bf16 arithmetic without .to(tl.float32)",
    ),
    Mutant(
        name="logprobs_top_ids_first_chunk_only", **_TOP_IDS,
        find="    live = slot < splits * n\n", replace="    live = slot < n\n",
        description="the top-k ids merged from the first chunk's candidates only: a top entry further "
                    "along the row (V > 4096) is never chosen",
        ref="fault class: a split selection whose combine reads one partial list (a stride or count "
            "of one chunk where it needed all of them)",
    ),
    Mutant(
        name="logprobs_top_ids_chunk_offset_lost", **_TOP_IDS,
        find="    return chunk * (1 << COL_BITS) - (code",
        replace="    return 0 * (1 << COL_BITS) - (code",
        description="a chunk's candidate decoded to its column within the chunk, without the chunk's "
                    "offset: ids from later chunks name entries of the first",
        ref="fault class: local indices of a split selection returned without the global offset "
            "(as the split top-p mutant top_p_split_candidates_overwrite)",
    ),
    Mutant(
        name="logprobs_chunks_by_batch", kernel="logprobs",
        module="samplecheck.kernels.logprobs", entry="compute_logprobs",
        find="    splits = cdiv(vocab, CHUNK)\n",
        replace="    chunk = BLOCK if batch < 4 else CHUNK\n    splits = cdiv(vocab, chunk)\n",
        then=(("n_cols - 1, CHUNK=CHUNK,", "n_cols - 1, CHUNK=chunk,"),
              ("CHUNK=CHUNK, BLOCK=BLOCK, SPLIT_BLOCK", "CHUNK=chunk, BLOCK=BLOCK, SPLIT_BLOCK")),
        description="rows split into finer chunks when the batch is small (to fill the GPU): the log-sum-exp "
                    "adds its partial sums in another order, so a row's logprobs change in the last bits "
                    "with the batch size",
        ref="vllm#51187 class (logprobs not bitwise equal across batch compositions); issue 33's example of a "
            "reduction order that depends on the batch size",
        killed_by=catalog.BATCH_INVARIANCE,
    ),
)
