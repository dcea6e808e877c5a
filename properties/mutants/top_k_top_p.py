"""Mutants of the top_k_top_p kernel."""

from samplecheck.mutants import Mutant
from samplecheck.registry import catalog

# The split top-p path has no entry point of its own: its mutants are reached through the op's.
_SPLIT_PATH = dict(kernel="top_k_top_p", module="samplecheck.kernels.top_k_top_p_split",
                   via=("samplecheck.kernels.top_k_top_p",), entry="apply_top_k_top_p")
_CHUNK_PATH = dict(kernel="top_k_top_p", module="samplecheck.kernels.top_k_chunks",
                   via=("samplecheck.kernels.top_k_top_p",), entry="apply_top_k_top_p")
# The one-program kernel's search helpers (`cut_search`), reached through the op's module alone:
# the other paths keep the real helpers.
_ONE_PROGRAM_SEARCH = dict(kernel="top_k_top_p", module="samplecheck.kernels.cut_search",
                           via=("samplecheck.kernels.top_k_top_p",), entry="apply_top_k_top_p")
_K_SPLIT_PATH = dict(kernel="top_k_top_p", module="samplecheck.kernels.top_k_split",
                     via=("samplecheck.kernels.top_k_top_p",), entry="apply_top_k_top_p")

MUTANTS = (
    Mutant(
        name="triton_row_stride_ignored", kernel="top_k_top_p",
        module="samplecheck.kernels.top_k_top_p", entry="apply_top_k_top_p",
        find="row_ptr = logits_ptr + row * row_stride", replace="row_ptr = logits_ptr + row * V",
        description="rows addressed as row * V, ignoring stride(0) (padded vocab views read the wrong row)",
        ref="vllm#42684, fixed by vllm#42739",
    ),
    Mutant(
        name="torch_softmax_in_bf16", kernel="top_k_top_p",
        module="samplecheck.kernels.top_k_top_p_torch", entry="apply_top_k_top_p_torch",
        find="survivors.softmax(dim=-1, dtype=torch.float32)", replace="survivors.softmax(dim=-1)",
        description="top-p softmax and cumulative mass accumulated in the logits' dtype (bf16)",
        ref="vllm#48641 (the fix upcasts the top-p fallback's softmax)",
    ),
    Mutant(
        name="torch_top_p_one_extra_token", kernel="top_k_top_p",
        module="samplecheck.kernels.top_k_top_p_torch", entry="apply_top_k_top_p_torch",
        find="last = ((mass_before < p[:, None]).sum(dim=-1, keepdim=True) - 1).clamp(min=0)",
        replace="last = (mass_before < p[:, None]).sum(dim=-1, keepdim=True).clamp(max=vocab - 1)",
        description="top-p cut one sorted position too low: keeps one token past the crossing token",
        ref="off-by-one at the top-p boundary (cf. fi#2202, the opposite direction)",
    ),
    Mutant(
        name="triton_int32_row_offset", kernel="top_k_top_p",
        module="samplecheck.kernels.top_k_top_p", entry="apply_top_k_top_p",
        find="row = tl.program_id(0).to(tl.int64)\n    row_ptr = logits_ptr + row * row_stride",
        replace="row = tl.program_id(0)\n    row_ptr = logits_ptr + row * row_stride",
        description="row offset row * row_stride computed in int32: wraps once it passes 2**31 elements",
        ref="fault class: an int32 offset overflow at large B x V (issue 5); GPU-only (needs a > 4 GiB buffer)",
        devices=("cuda",),
        killed_by=catalog.LARGE_OFFSETS,
        faults_memory=True,
    ),
    Mutant(
        name="torch_masked_fill_zero", kernel="top_k_top_p",
        module="samplecheck.kernels.top_k_top_p_torch", entry="apply_top_k_top_p_torch",
        find='logits.masked_fill_(logits < cut, float("-inf"))', replace="logits.masked_fill_(logits < cut, 0.0)",
        description="dropped tokens set to 0 instead of -inf (they keep probability exp(0) / Z)",
        ref="fault class: masked fill 0 instead of -inf (issue 5)",
    ),
    Mutant(
        name="torch_top_k_first_of_ties", kernel="top_k_top_p",
        module="samplecheck.kernels.top_k_top_p_torch", entry="apply_top_k_top_p_torch",
        find='logits.masked_fill_(logits < cut, float("-inf"))',
        replace=("keep = logits > cut\n"
                 "    if k is not None:\n"
                 "        ties = logits == cut\n"
                 "        room = torch.where(k_on, k, vocab)[:, None] - keep.sum(dim=-1, keepdim=True)\n"
                 "        keep |= ties & (ties.cumsum(dim=-1) <= room)\n"
                 "    else:\n"
                 "        keep |= logits == cut\n"
                 '    logits.masked_fill_(~keep, float("-inf"))'),
        description="exactly k survivors: ties at the k-th value kept in column order up to k, the rest dropped",
        ref="vllm#50979 (a path keeping exactly k at the k-th value ties) and fi PR #3774 (tie policy differences)",
    ),
    Mutant(
        name="top_p_split_last_chunk_untallied", **_SPLIT_PATH,
        find="    live = (s < S)[:, None]\n", replace="    live = (s < S - 1)[:, None]\n",
        description="the split top-p path's combine of per-chunk counts and masses skips the last chunk: the "
                    "bracket and the cut come from a row without its tail",
        ref="fault class: an off-by-one in a cross-CTA reduction (a multi-CTA selection's combine step, "
            "FlashInfer #2119's design)",
    ),
    Mutant(
        name="top_p_split_chunk_max_as_row_max", **_SPLIT_PATH,
        find="    key_hi = tl.max(tl.load(chunk_ptr + 1, mask=s < S, other=INT32_MIN_JIT), axis=0)\n",
        replace="    key_hi = tl.load(keys_ptr + (row * S + tl.minimum(tl.program_id(1), S - 1)) * 2 + 1)\n",
        description="each program of the split top-p path takes its own chunk's max as the row max: the "
                    "masses exp(x - max) and the bracket's top differ between the chunks of one row",
        ref="fault class: a per-CTA partial (max) used where the row's combined value is needed",
    ),
    Mutant(
        name="top_p_split_candidates_overwrite", kernel="top_k_top_p", module="samplecheck.kernels.cut_search",
        via=("samplecheck.kernels.top_k_top_p_split", "samplecheck.kernels.top_k_top_p"), entry="apply_top_k_top_p",
        find="pos += tl.atomic_add(counter_ptr, taken.to(tl.int64)).to(tl.int32)",
        replace="tl.atomic_add(counter_ptr, taken.to(tl.int64))",
        description="the split top-p path's chunks copy their candidates from position 0 of the row's scratch "
                    "(the count still adds up): they overwrite each other and leave unwritten slots ranked",
        ref="fault class: a compaction into a shared buffer without the global offset (a missing atomic "
            "reservation)",
    ),
    Mutant(
        name="top_p_split_second_step_pivots_misplaced", **_SPLIT_PATH,
        find="narrow_step(spread_pivots(lo, hi, NUM_PIVOTS), count, mass, lo, hi,",
        replace="narrow_step(spread_pivots(lo, key_hi, NUM_PIVOTS), count, mass, lo, hi,",
        description="the split top-p path combines its second search step's tallies as if their pivots were "
                    "spread up to the row max, not over the first step's bracket: the bracket and the cut come "
                    "from counts and masses of other keys",
        ref="fault class: a multi-CTA search step whose combine assumes other pivots than the CTAs tallied "
            "(step state re-derived from a value another program changed in between)",
    ),
    Mutant(
        name="top_p_split_written_before_last_rank", **_SPLIT_PATH,
        find="if tl.atomic_add(state_ptr + RANKED, 1) == tl.num_programs(1) - 1:",
        replace="if tl.atomic_add(state_ptr + RANKED, 1) == tl.num_programs(1) - 2:",
        description="the split top-p path's row is written by the second-to-last rank program to count in: the "
                    "last one's candidates have not lowered the cut yet (a row ranked by one program is never "
                    "written)",
        ref="fault class: an off-by-one in a last-block arrival count (a multi-CTA selection finishing a row "
            "before every CTA published its part)",
    ),
    Mutant(
        name="top_k_chunks_early_finish", **_CHUNK_PATH,
        find="if tl.atomic_add(count_ptr, 1) == S - 1:", replace="if tl.atomic_add(count_ptr, 1) == S - 2:",
        description="the chunk top-k path's row is finished by the second-to-last program to count in: the "
                    "last chunk's candidates are not in the merge yet (a one-chunk row is never finished)",
        ref="fault class: an off-by-one in a last-block arrival count (a multi-CTA selection finishing a row "
            "before every CTA published its part)",
    ),
    Mutant(
        name="top_k_chunks_cut_one_past_kth", **_CHUNK_PATH,
        find="kth_key = kth_largest_key(keys, real, k, KEY_BITS, DIGIT_BITS)",
        replace="kth_key = kth_largest_key(keys, real, k + 1, KEY_BITS, DIGIT_BITS)",
        description="the chunk top-k path cuts at the (k + 1)-th largest entry: one entry more than k survives "
                    "(with its ties)",
        ref="fault class: a 0- vs 1-based rank in a top-k threshold",
    ),
    Mutant(
        name="top_k_chunks_radix_count_dropped", kernel="top_k_top_p", module="samplecheck.kernels.chunk_codes",
        via=("samplecheck.kernels.top_k_chunks", "samplecheck.kernels.top_k_top_p"),
        entry="apply_top_k_top_p",
        find="at_or_above = above + tl.sum(counts, axis=0)", replace="at_or_above = 0 * above + tl.sum(counts, axis=0)",
        description="the digit-by-digit selection of the k-th largest key counts only the keys in the current "
                    "bucket, forgetting those above it that earlier digits fixed: past the first digit it picks "
                    "too high a key, and a chunk lists, or a row keeps, fewer than k entries",
        ref="fault class: a multi-pass radix select that does not carry the count above the chosen bucket into "
            "the next pass (k not reduced by the entries already above)",
    ),
    Mutant(
        name="top_k_chunks_nan_ranked_first", **_CHUNK_PATH,
        find="local, live, COL_BITS, False)", replace="local, live, COL_BITS, True)",
        description="the chunk top-k path ranks NaN above +inf when it selects (as torch.topk does) while the "
                    "mask drops NaN: rows with NaN keep fewer than k entries",
        ref="fault class: NaN ordered one way by the selection and another by the mask (torch.topk's NaN-first "
            "order reused for a top-k mask)",
        killed_by=catalog.EDGE_VALUES,
    ),
    Mutant(
        name="top_k_chunks_top_p_listed_ties_only", **_CHUNK_PATH,
        find="if tl.sum(rescan.to(tl.int32), axis=0) > 0:", replace="if tl.sum(rescan.to(tl.int32), axis=0) < 0:",
        description="the chunk path's top-p total counts the k-th value's ties from the chunk lists alone: a "
                    "chunk that listed only part of its entries at that value holds more, whose mass the total "
                    "leaves out",
        ref="fault class: a top-p renormalised over the selected k while the mask keeps every tie at the k-th "
            "value (fi PR #3774, tie policy differences)",
    ),
    Mutant(
        name="top_k_chunks_drop_at_chunk_level", **_CHUNK_PATH,
        find="store_neg_inf(row_ptr + first + local, live & (keys < level))",
        replace="store_neg_inf(row_ptr + first + local, live & (keys <= level))",
        description="each chunk program drops its entries at its own k-th value too, before the row's cut is "
                    "known: where the row's k-th value is that chunk's, its ties are lost",
        ref="fault class: a strict bound taken inclusive in a multi-CTA selection's early write (a CTA pruning "
            "by its local threshold, which only bounds the global one)",
    ),
    Mutant(
        name="top_k_chunks_overflow_left", **_CHUNK_PATH,
        find="if tl.sum(pass_over.to(tl.int32), axis=0) > 0:", replace="if tl.sum(pass_over.to(tl.int32), axis=0) < 0:",
        description="the chunk path's last program writes only the listed entries: the entries at a chunk's "
                    "k-th value that its full list left out survive below the row's cut",
        ref="fault class: a bounded candidate buffer whose overflow is dropped silently (a per-CTA top-k list "
            "cut at its capacity)",
    ),
    Mutant(
        name="top_k_chunks_top_p_mass_at_or_above", **_CHUNK_PATH,
        find="above = tl.cumsum(w, axis=0) - w - (rank - run_start) * w",
        replace="above = tl.cumsum(w, axis=0) - (rank - run_start) * w",
        description="the chunk path's top-p counts each listed entry's own weight in the mass above it: the "
                    "crossing value is dropped (a cumulative mass taken inclusive instead of exclusive)",
        ref="off-by-one at the top-p boundary (fi#2202)",
    ),
    Mutant(
        name="top_k_split_bound_one_rank_high", **_K_SPLIT_PATH,
        find="lo = lanes_bound(lanes, k, key_lo, key_hi, BOUND_STEPS, NUM_PIVOTS)",
        replace="lo = lanes_bound(lanes, k - 1, key_lo, key_hi, BOUND_STEPS, NUM_PIVOTS)",
        description="the k-split top-k path bounds the cut by the (k - 1)-th largest lane maximum: the bound "
                    "can sit above the k-th largest entry, which is then never a candidate",
        ref="fault class: a 0- vs 1-based rank in a top-k threshold",
    ),
    Mutant(
        name="top_k_split_drop_floor_inclusive", kernel="top_k_top_p", module="samplecheck.kernels.cut_search",
        via=("samplecheck.kernels.top_k_split", "samplecheck.kernels.top_k_top_p"), entry="apply_top_k_top_p",
        find="store_neg_inf(row_ptr + idx, live & ((key < lo) | nan))",
        replace="store_neg_inf(row_ptr + idx, live & ((key <= lo) | nan))",
        description="the k-split top-k path's chunk programs also write -inf at the entries equal to their "
                    "row's bracket floor, which the cut may keep",
        ref="off-by-one at a top-k threshold (a strict compare made inclusive)",
    ),
    Mutant(
        name="top_k_split_finish_from_a_full_scratch", **_K_SPLIT_PATH,
        find="write_cut(row_ptr, V, cut, scratch_ptr, listed, CAP, BLOCK, NUM_STAGES)",
        replace="write_cut(row_ptr, V, cut, scratch_ptr, tl.minimum(n, CAP), CAP, BLOCK, NUM_STAGES)",
        description="the k-split top-k path finishes every row from its scratch, a bracket that overflowed it "
                    "too: entries past the scratch's capacity below the cut are left unmasked",
        ref="fault class: a truncated candidate buffer read as the whole candidate set",
    ),
    Mutant(
        name="top_k_drop_floor_inclusive", **_ONE_PROGRAM_SEARCH,
        find="store_neg_inf(row_ptr + idx, in_row & ((key < lo) | nan))",
        replace="store_neg_inf(row_ptr + idx, in_row & ((key <= lo) | nan))",
        description="the one-program top-k path's candidate pass also writes -inf at the entries equal to its "
                    "bracket's lower bound, which the cut may keep",
        ref="off-by-one at a threshold (a strict compare made inclusive)",
    ),
    Mutant(
        name="top_k_lane_bound_from_the_smallest_lane", **_ONE_PROGRAM_SEARCH,
        find="start = tl.where(tl.sum(finite.to(tl.int32), axis=0) >= k, smallest, key_lo)",
        replace="start = smallest",
        description="the top-k lane bound starts its search at the smallest lane maximum above -inf even where "
                    "fewer than k lanes hold one: where the lanes with an entry are fewer than k but the entries "
                    "are not, the bound passes the k-th largest entry, which is then masked",
        ref="fault class: a search's start taken from a sample that may not hold k entries (a bound valid only "
            "for a full sample)",
    ),
    Mutant(
        name="top_p_inf_cut_from_a_narrowed_listing", **_ONE_PROGRAM_SEARCH,
        find="listed = tl.where(covered, listed, -1)  # a narrowed top-k bracket may end below key_hi",
        replace="pass",
        description="where +inf entries make the top-p cut the row's max key, the one-program path still "
                    "finishes the row from the top-k stage's candidates, whose narrowed bracket may end below "
                    "it: finite entries above that bracket keep their values",
        ref="fault class: a buffer's contents reused after the invariant they were built under changed "
            "(a stale candidate list)",
        killed_by=catalog.EDGE_VALUES,
    ),
    Mutant(
        name="top_p_digit_mass_includes_the_digit", **_ONE_PROGRAM_SEARCH,
        find="mass_higher = tl.sum(masses, axis=0) - tl.cumsum(masses, axis=0)",
        replace="mass_higher = tl.sum(masses, axis=0) - tl.cumsum(masses, axis=0) + masses",
        devices=("cuda",),  # the interpreter's config ranks in compare tiles (RANK_ROWS > 0)
        description="the one-program path's digit selection counts a digit's own mass as above its largest "
                    "entry: the top-p cut can rise past the entry whose mass reaches p, which is then masked",
        ref="off-by-one in a prefix sum (an inclusive scan where the predicate needs an exclusive one)",
    ),
    Mutant(
        name="top_k_listed_write_at_the_cut", **_ONE_PROGRAM_SEARCH,
        find="tl.store(row_ptr + column, neg_inf, mask=live & (order_key(x) < cut))",
        replace="tl.store(row_ptr + column, neg_inf, mask=live & (order_key(x) <= cut))",
        description="the one-program path drops its candidates at the cut too, not only below it: the k-th "
                    "largest entry and its ties are masked",
        ref="off-by-one at a threshold (a strict compare made inclusive)",
    ),
)
