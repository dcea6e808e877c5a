"""What test_edge_values catches, on fake plug-ins (tests/cover/fake_backends.py), and what a
declared `nan_policy` changes: the property as the suite runs it (same drawing and check),
derandomized, on a record's own backend and on a fake.

- Bad words banned by adding -inf (Hugging Face transformers' NoBadWordsLogitsProcessor): a
  banned +inf becomes NaN, not -inf. Caught; our kernel passes; still caught when the fake
  declares `nan_policy: row_unspecified` (the rows it leaves unjudged are those holding NaN in
  the input, not those the backend turned into NaN).
- Top-k / top-p ranking NaN above every value: caught under the contract, passes when it
  declares `nan_policy: row_unspecified`."""

import dataclasses

import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from samplecheck.harness.edge_check import check_edge_rows
from samplecheck.inputs.drawing import draw_case
from samplecheck.inputs.edge_rows import edge_rows
from samplecheck.registry.matrix import RECORDS, Combo
from samplecheck.registry.records import Backend
from samplecheck.tests.cover.test_edge_values import finite_cases

pytestmark = pytest.mark.interpreter

EXAMPLES = 40
FAKES = "samplecheck.tests.cover.fake_backends"
UNSPECIFIED = {"nan_policy": "row_unspecified"}


def edge_property(combo, device, budget) -> None:
    """test_edge_values' examples on `combo`, EXAMPLES of them, derandomized, not shrunk."""
    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              phases=(Phase.generate,), suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def examples(data):
        case = draw_case(data, combo, finite_cases(combo, budget))
        check_edge_rows(combo, case, data.draw(edge_rows(), label="edge rows"), device)

    examples()


def combo_of(record: str, backend: Backend) -> Combo:
    return Combo(RECORDS[record], backend, torch.float32, "contig")


def fake(name: str, semantics=None) -> Backend:
    return Backend(name, f"{FAKES}:{name}", error_messages=False, semantics=semantics or {})


def ours(record: str) -> Combo:
    return combo_of(record, RECORDS[record].backends[0])


@pytest.mark.parametrize("semantics", [{}, UNSPECIFIED], ids=["contract", "nan_row_unspecified"])
def test_a_ban_by_adding_negative_infinity_is_caught(device, budget, semantics):
    edge_property(ours("bad_words"), device, budget)
    with pytest.raises(AssertionError, match="neither kept bitwise nor set to -inf"):
        edge_property(combo_of("bad_words", fake("bans_by_adding_negative_infinity", semantics)), device, budget)


def test_nan_ranked_largest_passes_only_where_declared(device, budget):
    edge_property(combo_of("top_k_top_p", fake("top_k_top_p_nan_largest", UNSPECIFIED)), device, budget)
    with pytest.raises(AssertionError, match="kept set differs from the oracle"):
        edge_property(combo_of("top_k_top_p", fake("top_k_top_p_nan_largest")), device, budget)
