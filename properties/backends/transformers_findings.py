"""The defects the transformers pack found (docs/findings-transformers.md, T1 to T5), as the
marks and case filters that pin them on the pack's backends. Each finding also has a minimal
reproducer in tests/cover/test_transformers_findings.py (a strict xfail that turns red when
transformers changes the behaviour)."""

from samplecheck.harness import catalog
from samplecheck.harness.registry import Mark
from samplecheck.inputs.strategies import expand_pool

EDGE_VALUES = "test_edge_values"  # tests/cover/test_edge_values.py (not yet a samplecheck.harness.catalog name)

UNMASKED_ALLOWLIST = ("finding T1: PrefixConstrainedLogitsProcessor sets an allowlist whose logits are all -inf after "
                      "the processors before it to 0: an all -inf row becomes uniform over its allowlist, and a stop "
                      "id that min_new_tokens masked becomes drawable when it is the only allowed id")
INF_MINUS_INF = ("finding T2: NoBadWordsLogitsProcessor and PrefixConstrainedLogitsProcessor mask by adding -inf, so "
                 "a masked +inf logit becomes NaN (and generate's torch.multinomial then raises)")
INF_ROW_UNFILTERED = ("finding T3: TopPLogitsWarper (and continuous batching's) and MinPLogitsWarper mask nothing in a "
                      "row holding +inf: its softmax is NaN there, and no NaN compares true")
SAMPLING_RAISES = ("finding T4: generate's sampling step (softmax, then one torch.multinomial over the batch) raises "
                   "on a row with no finite distribution (NaN, +inf or every logit -inf): the whole batch fails")
P_ONE_MASKED = ("finding T5: continuous batching's top-p runs on every row of the batch, and a row with top_p = 1 "
                "loses the tokens whose fp32 probability underflows (cumulative mass <= 1 - 1 = 0)")

ADDITIVE_MASKS = (Mark("xfail", INF_MINUS_INF, test=EDGE_VALUES),)
INF_ROWS = (Mark("xfail", INF_ROW_UNFILTERED, test=EDGE_VALUES),)
CB_TOP_P = INF_ROWS + (Mark("xfail", P_ONE_MASKED, test=catalog.OFF_ENCODINGS),)
SAMPLING = tuple(Mark("xfail", SAMPLING_RAISES, test=test) for test in (EDGE_VALUES, catalog.ROW_ISOLATION))


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
