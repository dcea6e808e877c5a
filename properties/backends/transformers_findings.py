"""The defects the transformers pack found (docs/findings-transformers.md, T1 to T6), as the
marks and case filters that keep them out of, or pin them in, the generic properties on the
pack's backends. Each finding has a minimal reproducer in tests/cover/test_transformers_findings.py
(a strict xfail that turns red when transformers changes the behaviour)."""

import torch

from samplecheck.inputs.pools import expand_pool
from samplecheck.judging.edge_values import kept_set_differs_in_rows_holding
from samplecheck.registry import catalog
from samplecheck.registry.checks import rows_dropping_underflowed_only
from samplecheck.registry.records import Mark

UNMASKED_ALLOWLIST = "finding T1: PrefixConstrainedLogitsProcessor sets an allowlist left all -inf to 0"
INF_MINUS_INF = ("finding T2: NoBadWordsLogitsProcessor and PrefixConstrainedLogitsProcessor mask by adding -inf, so "
                 "a masked +inf logit becomes NaN (and generate's torch.multinomial then raises)")
INF_ROW_UNFILTERED = ("finding T3: TopPLogitsWarper (and continuous batching's) and MinPLogitsWarper mask nothing in a "
                      "row holding +inf: its softmax is NaN there, and no NaN compares true")
SAMPLING_RAISES = ("finding T4: generate's sampling step (softmax, then one torch.multinomial over the batch) raises "
                   "on a row with no finite distribution (NaN, +inf or every logit -inf): the whole batch fails")
P_ONE_MASKED = ("finding T5: continuous batching's top-p runs on every row of the batch, and a row with top_p = 1 "
                "loses the tokens whose fp32 probability underflows (cumulative mass <= 1 - 1 = 0)")

# Pins with a signature (Mark.witness) where a drawn case reaches the finding only sometimes: a
# failure showing it is the expected one, any other failure fails, and a case that misses it
# passes; the reproducers in tests/cover/test_transformers_findings.py pin each strictly.
ADDITIVE_MASKS = (Mark("xfail", INF_MINUS_INF, test=catalog.EDGE_VALUES,
                       witness=lambda failure: "neither kept bitwise nor set to -inf" in failure),)
# An edge row of -inf over a row with an allowlist shows T1 there (drawn cases leave it out).
ALLOWLIST_MASKS = (Mark("xfail", INF_MINUS_INF + "; and " + UNMASKED_ALLOWLIST, test=catalog.EDGE_VALUES,
                        witness=lambda failure: "(nan, -inf)" in failure or "(0.0, -inf)" in failure),)
INF_ROWS = (Mark("xfail", INF_ROW_UNFILTERED, test=catalog.EDGE_VALUES, witness=kept_set_differs_in_rows_holding("+inf")),)
CB_TOP_P = INF_ROWS + (Mark("xfail", P_ONE_MASKED, test=catalog.OFF_ENCODINGS, witness=rows_dropping_underflowed_only),)
SAMPLING = tuple(Mark("xfail", SAMPLING_RAISES, test=test, witness=lambda failure: any(
    sign in failure for sign in ("probability tensor contains", "device-side assert")))
    for test in (catalog.EDGE_VALUES, catalog.ROW_ISOLATION))

F32_MAX = torch.finfo(torch.float32).max


def no_reciprocal_overflow(case) -> bool:
    """no temperature or repetition penalty whose fp32 reciprocal overflows (T6: on CUDA transformers
    multiplies by it)"""
    values = case.temperature if hasattr(case, "temperature") else case.repetition
    return values is None or all(v == 0 or v * F32_MAX >= 1 for v in expand_pool(values, case.logits.batch))


def satisfiable_allowlists(case) -> bool:
    """no allowlist that the other masks can leave all -inf (allowlists only on rows without
    -inf entries, none within its row's active stop ids): transformers un-masks it (T1)"""
    if case.allowed is None or not any(case.allowed):
        return True
    if case.logits.neg_inf_fraction > 0:
        return False
    rows = case.logits.batch
    stops = expand_pool(case.min_tokens, rows) if case.min_tokens is not None else [((), 0, 0)] * rows
    return not any(allowed and set(allowed) <= set(ids) and done < least
                   for allowed, (ids, least, done) in zip(expand_pool(case.allowed, rows), stops))
