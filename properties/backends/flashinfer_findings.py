"""FlashInfer's findings (docs/findings.md; confirmed on an H200) as data: the strict xfails
and skips the FlashInfer pack's backends carry (samplecheck.backends.flashinfer_pack), with
the reason text that every report prints."""

import torch

from samplecheck.judging.edge_values import (any_signature, drew_masked_ids_in_finite_rows, dropped_kept_ids_in_finite_rows,
                                            kept_set_differs_in_rows_holding)
from samplecheck.registry import catalog
from samplecheck.registry.checks import rows_dropping_kept_only
from samplecheck.registry.records import Mark

F3 = ("F3: FlashInfer requires a contiguous, vector-aligned tensor where the API does not upcast it "
      "(flashinfer#1866): a row-strided view raises 'logits must be contiguous', and a contiguous view at "
      "storage offset 5 is a misaligned vector load (a sticky CUDA error: the adapter refuses the launch)")
F4 = ("F4: top_k_top_p_sampling_from_logits takes torch.softmax in the logits' dtype: bf16 probabilities "
      "(8 significant bits, not summing to 1) lose the tail behind a dominant token (a 0.12% tail never "
      "drawn in 17769 draws), and bf16 or fp16 probabilities (fp16's below 6.1e-5 are subnormal) tie "
      "near-maximal tokens with the maximum (drawn at tiny p)")
F6 = ("F6: top_p_renorm_probs with p = 1 (the filter off) at V >= 2048 (its radix AIR path, which has no "
      "p >= 1 fast path) zeroes the smallest probabilities: 33 ids of nearly flat rows at V = 32000")
STRIDED = ("padded64", "stride+1", "stride+37", "offset")


def contiguity_marks(dtypes=(None,), *, distribution: bool = False, memory: bool = False) -> tuple[Mark, ...]:
    """F3 as strict xfails: every property that calls the API on a strided or offset view,
    in `dtypes` (None: all). The sampling records' test_distribution draws from contiguous
    copies (not listed); a masking record's calls the view (distribution=True)."""
    where = [(catalog.ORACLE_EQUIVALENCE, layout) for layout in STRIDED]
    where += [(catalog.STRIDED_BITWISE, layout) for layout in STRIDED]
    where += [(catalog.ROW_ISOLATION, "padded64"), (catalog.GRAPH_REPLAY, "padded64")]
    if distribution:
        where += [(catalog.DISTRIBUTION, "padded64")]
    if memory:
        where += [(catalog.MEMORY_BOUND, "padded64")]
    marks = [Mark("xfail", F3, test=test, dtype=dtype, layout=layout) for test, layout in where for dtype in dtypes]
    if None in dtypes or torch.bfloat16 in dtypes:
        # Rows 2**31 elements apart: a strided view, whatever the "contig" in the test id.
        marks.append(Mark("xfail", F3, test=catalog.LARGE_OFFSETS, dtype=torch.bfloat16))
    return tuple(marks)


F10 = ("F10: FlashInfer's probability samplers give a row's missing mass (1 - its sum) to the last id of "
       "nonzero probability; a flat bf16 row of V = 1994, whose bf16 softmax sums to 0.99645, draws its "
       "last id 8 times as often as any other")
F11 = ("F11: top_k_top_p_sampling_from_logits' top_k_first fast path (top_k_max <= 256 at V >= 65536) keeps "
       "exactly k of the values tied at the k-th (256 of 300 tied ids drawn, where the plain call draws all "
       "300) and draws from another random stream")
EXACT_K_TIES = (Mark("xfail", F11, test=catalog.DISTRIBUTION, dtype=torch.float32, layout="contig"),)
# F4 is a finding, not the compute_dtype=logits_dtype convention: both orders draw ids outside
# that axis' widened top-p band, at tiny p and at p = 0.5 (docs/findings.md, F4).
HALF_SOFTMAX = tuple(Mark("xfail", f"{F4}. {F10}", test=test, dtype=torch.bfloat16)
                     for test in (catalog.DISTRIBUTION, catalog.RARE_EVENTS)) + tuple(
    Mark("xfail", F4, test=test, dtype=dtype)
    for test in (catalog.ORACLE_EQUIVALENCE, catalog.OFF_ENCODINGS) for dtype in (torch.bfloat16, torch.float16))
# F4 reaches the finite rows of the edge-value cases too: pinned there by its signature (ids the
# oracle masks drawn in rows without edge values); any other failure fails the test.
HALF_SOFTMAX += tuple(Mark("xfail", F4, test=catalog.EDGE_VALUES, dtype=dtype, witness=drew_masked_ids_in_finite_rows)
                      for dtype in (torch.bfloat16, torch.float16))
F15 = ("F15: a row holding +inf through a *_renorm_probs API (softmax, then the renormalisation, as an engine "
       "chains them): the fp32 softmax of the row is NaN, and top_k_renorm_probs / top_p_renorm_probs return "
       "zeros for it, so the +inf entries, which hold the row's whole mass, are masked with the rest")
INF_ROW_MASKED = (Mark("xfail", F15, test=catalog.EDGE_VALUES, witness=kept_set_differs_in_rows_holding("+inf")),)
# top_p_renorm_probs in the edge-value property: F15 in rows holding +inf, and F6 (ids dropped
# from finite rows, p off) in the others, alone or in one case; one mark (a test reads one
# signature) that accounts for the failing rows one by one.
INF_ROW_MASKED_OR_SHORT_NUCLEUS = (Mark("xfail", f"{F15}. {F6}", test=catalog.EDGE_VALUES,
                                        witness=any_signature(kept_set_differs_in_rows_holding("+inf"),
                                                              dropped_kept_ids_in_finite_rows)),)
F7 = ("F7: the joint order of top_k_top_p_sampling_from_logits takes torch.softmax of the view as given, and "
      "torch rounds a misaligned (storage offset 5) row differently from an aligned one, so an id at a CDF "
      "boundary can move to its neighbour (42858 vs 42857); layout invariance is not in FlashInfer's contract")
MISALIGNED_SOFTMAX = (Mark("skip", F7, test=catalog.STRIDED_BITWISE, layout="offset"),)
# F6 against the oracle's kept set: pinned by its signature (every differing row only lost ids
# the oracle keeps), so that any other difference there fails; the exact distribution check
# states no shape, so it stays a strict xfail over the cell.
SHORT_NUCLEUS = tuple(Mark("xfail", F6, test=test, witness=rows_dropping_kept_only)
                      for test in (catalog.ORACLE_EQUIVALENCE, catalog.OFF_ENCODINGS)) + (
    Mark("xfail", F6, test=catalog.EXACT_DISTRIBUTION),)
F8 = ("F8: top_k_top_p_sampling_from_probs(filter_apply_order='top_k_first', deterministic=True) is not "
      "repeatable on fp16-derived probabilities at V = 202048: 76 of 200 identical calls returned a "
      "neighbouring id in one row (135386 vs 135387)")
F8_FP32 = (F8 + "; also in fp32 (H200 run 9: test_strided_bitwise at B = 207, V = 151936, tied rows, "
           "k = 151935, a Hypothesis FlakyFailure): the top-k renormalisation runs non-deterministic")
# Two calls agree only about 60% of the time there, so the tests that compare two calls
# (deterministic, strided vs contiguous, row isolation, graph replay vs eager) would pass or
# fail by chance: they are skipped, and test_repeated_calls_agree (50 calls on the pinned fp16 case) is the strict xfail.
UNREPEATABLE_HALF = (Mark("skip", F8, test=catalog.DETERMINISTIC, dtype=torch.float16),
                     Mark("xfail", F8, test=catalog.REPEATED_CALLS_AGREE, dtype=torch.float16)) + tuple(
    Mark("skip", F8_FP32, test=test) for test in (catalog.DETERMINISTIC, catalog.STRIDED_BITWISE, catalog.ROW_ISOLATION,
                                                  catalog.GRAPH_REPLAY))
