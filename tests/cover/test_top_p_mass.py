"""The top-p contract in mass terms, on bf16 rows (issue 4): in every row with top-p on, the
kept mass (fp64 softmax of the input over the top-k survivors) is at least p, less the
oracle's declared band, and dropping the smallest kept value would leave less than p (the
nucleus is minimal by value). With the support check of test_distribution (no draw outside
the kept set), this is the nucleus property: mass >= p, and zero frequency outside it."""

import pytest
import torch
from hypothesis import given, strategies as st

from samplecheck.oracles.top_k_top_p import top_k_top_p_reference
from samplecheck.inputs.drawing import draw_case, skip_unless_accepted
from samplecheck.families.masking import TopKTopPCase, top_k_top_p_cases
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.harness.runner import prepare, run

pytestmark = pytest.mark.interpreter


TOP_P_ONLY = TopKTopPCase(LogitsRecipe(batch=2, vocab=100), None, (0.5,))


@pytest.mark.matrix(kernel="top_k_top_p", dtypes=(torch.bfloat16,), layouts=("contig",))
@given(data=st.data())
def test_top_p_kept_mass(combo, device, budget, data):
    skip_unless_accepted(combo, TOP_P_ONLY, "top-p")
    case = draw_case(data, combo, top_k_top_p_cases(budget).filter(lambda c: c.p is not None))
    placed, args = prepare(combo, case, device)
    original = placed.view.clone()
    output = run(combo, placed.view, args)
    x = original.double()
    if args["k"] is not None:  # the top-k survivors (the oracle's, ties kept) are the mass basis
        x = x.masked_fill(~top_k_top_p_reference(original, args["k"], None).kept, float("-inf"))
    band = combo.info.tolerance[combo.dtype]
    p = args["p"].double()
    checked = (p < 1) & torch.isfinite(x).any(dim=-1)
    probs = torch.softmax(x, dim=-1)
    kept = output != float("-inf")
    mass = torch.where(kept, probs, 0).sum(dim=-1)
    low = (checked & (mass < p - band)).nonzero().flatten().tolist()
    assert not low, (f"{combo.id} rows {low}: kept mass {mass[low].tolist()} < p = {p[low].tolist()} "
                     f"(band {band:g})")
    smallest = torch.where(kept, x, float("inf")).min(dim=-1, keepdim=True).values
    without = torch.where(kept & (x > smallest), probs, 0).sum(dim=-1)
    loose = (checked & (without >= p + band)).nonzero().flatten().tolist()
    assert not loose, (f"{combo.id} rows {loose}: the nucleus is not minimal: without its smallest value the "
                       f"kept mass is {without[loose].tolist()} >= p = {p[loose].tolist()}")
