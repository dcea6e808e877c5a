"""Mutants of the penalties kernel."""

from samplecheck.mutants import Mutant

MUTANTS = (
    Mutant(
        name="penalties_repetition_output_only", kernel="penalties",
        module="samplecheck.kernels.penalties", entry="apply_penalties",
        find="x = tl.where(x > 0.0, tl.math.div_rn(x, tl.broadcast_to(r, [BLOCK])), x * r)",
        replace="x = tl.where(seen & (x > 0.0), tl.math.div_rn(x, tl.broadcast_to(r, [BLOCK])),"
                " tl.where(seen, x * r, x))",
        description="repetition penalty applied to output tokens only: ids seen only in the prompt keep their logit",
        ref="docs/backends.md, 'penalties': repetition acts on prompt ∪ output (HF/vLLM), unlike "
            "frequency/presence",
    ),
    Mutant(
        name="penalties_counts_include_prompt", kernel="penalties",
        module="samplecheck.kernels.penalties", entry="apply_penalties",
        find='counts.sub_(torch.searchsorted(keys, out_key, side="left", out_int32=True))',
        replace='counts.sub_(torch.searchsorted(keys, out_key - 1, side="left", out_int32=True))',
        description="frequency/presence counts include prompt occurrences",
        ref="docs/backends.md, 'penalties': c_out counts output tokens only (OpenAI definition)",
    ),
    Mutant(
        name="penalties_sign_rule_swapped", kernel="penalties",
        module="samplecheck.kernels.penalties", entry="apply_penalties",
        find="x = tl.where(x > 0.0, tl.math.div_rn(",
        replace="x = tl.where(x < 0.0, tl.math.div_rn(",
        description="repetition divides negative logits and multiplies positive ones (r > 1 then boosts)",
        ref="classic sign fault of the HF repetition penalty (divide if l > 0, else multiply)",
    ),
    Mutant(
        name="penalties_ids_wrap_around", kernel="penalties",
        module="samplecheck.kernels.penalties", entry="apply_penalties",
        find="return torch.where((ids >= 0) & (ids < vocab), ids.to(dtype) * 2 + role, 2 * vocab)",
        replace="return (ids.to(dtype) * 2 + role).remainder(2 * vocab)",
        description="ids taken modulo V: the -1 placeholder penalises token V - 1 and the pad id V token 0",
        ref="vLLM #27910 (-1 async placeholders reached scatter_add as an index) and #49081 (ids >= V unchecked)",
    ),
    Mutant(
        name="penalties_row_sort_counts_cross_ids", kernel="penalties",
        module="samplecheck.kernels.penalties", entry="apply_penalties",
        find="return id_b, n_b + tl.where(id_a == id_b, n_a, 0)",
        replace="return id_b, n_b + n_a",
        description="the row-sort path's count of output keys does not restart at a new id: each id's frequency "
                    "count holds every output entry of the smaller ids too",
        ref="fault class: a segmented scan run as a plain prefix sum (the segment boundary dropped)",
    ),
    Mutant(
        name="penalties_row_sort_writes_first_key", kernel="penalties",
        module="samplecheck.kernels.penalties", entry="apply_penalties",
        find="last = (j == LENGTH - 1) | (tl.gather(token, tl.minimum(j + 1, LENGTH - 1), 0) != token)",
        replace="last = (j == 0) | (tl.gather(token, tl.maximum(j - 1, 0), 0) != token)",
        description="the row-sort path writes each id at its first sorted key, where the scan has counted only "
                    "that key: an id seen twice in the output gets a count of at most 1",
        ref="fault class: a reduction's result read at the segment's start instead of its end",
    ),
    Mutant(
        name="penalties_pairs_count_skips_later_blocks", kernel="penalties",
        module="samplecheck.kernels.penalties", entry="apply_penalties",
        find="for t in range(blk + 1, n_out):",
        replace="for t in range(blk + 1, blk + 1):",
        description="the pair kernel counts an output id's occurrences in its own block and the blocks before "
                    "it only: an id repeated across blocks gets too small a frequency count",
        ref="fault class: a tiled reduction that skips the tiles after the current one",
    ),
    Mutant(
        name="penalties_row0_parameter", kernel="penalties",
        module="samplecheck.kernels.penalties", entry="apply_penalties",
        find="f = tl.load(frequency_ptr + row)\n    q = tl.load(presence_ptr + row)\n    clear = True",
        replace="f = tl.load(frequency_ptr)\n    q = tl.load(presence_ptr + row)\n    clear = True",
        description="per-row frequency penalty read from row 0 for every row",
        ref="fault class: per-row parameters read from row 0 (issue 5)",
    ),
)
