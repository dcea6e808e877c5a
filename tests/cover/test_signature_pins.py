"""A pin with a signature (samplecheck.registry.records.Mark.witness) hides only its finding: in
its cell a failure that shows the signature is the expected failure, any other failure fails
the test, and a pass passes (the case did not reach the finding). A whole-cell strict pin, the
kind without a signature, reports any failure as expected. Shown on a synthetic cell, and on a
real pinned cell with a second defect planted."""

import os
import re
import subprocess
import sys

import pytest
import torch

from samplecheck.backends import transformers
from samplecheck.registry import catalog

pytestmark = pytest.mark.interpreter

PINNED_TESTS = '''
import pytest

from samplecheck.registry.records import Mark

SIGNED = Mark("xfail", "finding X", witness=lambda failure: "rows past 2**31 differ" in failure).as_pytest_marks()
WHOLE_CELL = Mark("xfail", "finding Y").as_pytest_marks()


@pytest.mark.parametrize("defect", [
    pytest.param("rows past 2**31 differ", marks=SIGNED, id="signed-the_finding"),
    pytest.param("row stride misread", marks=SIGNED, id="signed-another_defect"),
    pytest.param(None, marks=SIGNED, id="signed-not_reached"),
    pytest.param("row stride misread", marks=WHOLE_CELL, id="whole_cell-another_defect"),
])
def test_cell(defect):
    assert defect is None, defect
'''


@pytest.mark.cpu_subject
def test_a_signed_pin_hides_its_finding_alone(tmp_path):
    (tmp_path / "test_pinned.py").write_text(PINNED_TESTS)
    result = subprocess.run([sys.executable, "-m", "pytest", "test_pinned.py", "-rA", "-p", "no:cacheprovider",
                             "-p", "no:xdist", "-p", "samplecheck.harness.plugin", "--sc-device=cpu"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    outcomes = {name: outcome for outcome, name in
                re.findall(r"^(PASSED|FAILED|XFAIL|XPASS) test_pinned.py::test_cell\[([\w-]+)\]", result.stdout, re.M)}
    assert outcomes == {"signed-the_finding": "XFAIL", "signed-another_defect": "FAILED",
                        "signed-not_reached": "PASSED", "whole_cell-another_defect": "XFAIL"}, result.stdout[-3000:]
    assert "this failure is not the pinned finding's signature: finding X" in result.stdout


# A real pinned cell with a second defect planted: transformers' top-k/top-p (finding T3 pinned
# in the edge-value property by its signature: kept-set differences in rows holding +inf) made
# to skip top-p, a kept-set difference in any row where top-p binds.
PLANTED_PLUGIN = '''
import dataclasses
import os

import pytest

from samplecheck.registry import matrix

RECORD, BACKEND = "top_k_top_p", "transformers_top_k_top_p"
PINNED = {}


def top_p_skipped(logits, k=None, p=None):
    return PINNED["call"](logits, k, None)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    info = matrix.REGISTRY[RECORD]
    (backend,) = [b for b in info.backends if b.name == BACKEND]
    PINNED["call"] = backend.resolve()
    marks = backend.marks
    if os.environ["PLANTED_PINS"] == "whole_cell":  # the same findings, pinned over the whole cell
        marks = tuple(dataclasses.replace(m, witness=None) for m in marks)
    target = "planted:top_p_skipped" if os.environ["PLANTED_DEFECT"] == "1" else backend.target
    matrix.REGISTRY[RECORD] = dataclasses.replace(info, backends=(dataclasses.replace(backend, target=target,
                                                                                        marks=marks),))
'''


def _run_planted(tmp_path, pins: str, defect: bool) -> str:
    """The outcome (PASSED, FAILED, XFAIL, XPASS) of the edge-value property on the fp32 cell."""
    from samplecheck.harness.suite_files import config_args, suite_path

    (tmp_path / "planted.py").write_text(PLANTED_PLUGIN)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PLANTED_PINS": pins, "PLANTED_DEFECT": str(int(defect))}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(suite_path() / f"{catalog.EDGE_VALUES}.py"), *config_args(),
         "-k", "transformers_top_k_top_p-fp32 and not regression_examples", "-p", "planted", "-p", "no:cacheprovider",
         "-p", "no:xdist",
         "--sc-device=cpu", "--sc-profile=gate", "--sc-packs=transformers", "-rA"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    outcomes = re.findall(r"^(PASSED|FAILED|XFAIL|XPASS) \S+", result.stdout, re.M)
    assert len(outcomes) == 1, result.stdout[-3000:]
    return outcomes[0]


@pytest.mark.skipif(transformers.unavailable() is not None, reason=str(transformers.unavailable()))
def test_a_defect_planted_in_a_pinned_cell_fails_it(tmp_path):
    assert _run_planted(tmp_path, "signed", defect=False) in ("PASSED", "XFAIL")
    assert _run_planted(tmp_path, "signed", defect=True) == "FAILED"
    assert _run_planted(tmp_path, "whole_cell", defect=True) == "XFAIL"  # the old pin hid it


EDGE_FAILURES = {  # messages of the edge-value property, as the H200 printed them (trimmed)
    "inf_row": "top_k_top_p-x-fp32-contig: edge rows [(13, EdgeRow(row=13, value='+inf', whole=False, spot='listed', "
               "index=1))]: kept set differs from the oracle at 8191 entries (rows [13]); (13, 0): value=0.0, oracle keeps",
    "inf_row_renumbered": "top_k_top_p-x-fp16-contig: edge rows [(0, EdgeRow(row=0, value='nan', whole=True, spot='any', "
                          "index=6)), (6, EdgeRow(row=278, value='+inf', whole=False, spot='max', index=5))], rows "
                          "[1, 3, 4, 5, 6, 7] (NaN rows unspecified: nan_policy=row_unspecified): kept set differs from "
                          "the oracle at 1 entries (rows [4]); (4, 2541): value=inf, oracle keeps",
    "finite_row_kept": "top_k_top_p-x-fp32-contig: edge rows [(13, EdgeRow(row=13, value='+inf', whole=False, "
                       "spot='listed', index=1))]: kept set differs from the oracle at 2 entries (rows [2, 13]); (2, 5): "
                       "value=-1.0, oracle masks; (13, 0): value=0.0, oracle keeps",
    "finite_row_drawn": "top_k_top_p_sample-x-fp16-contig: edge rows [(1, EdgeRow(row=1, value='nan', whole=False, "
                        "spot='max', index=0))], rows [0, 2, 3, 4, 5, 6] (NaN rows unspecified: nan_policy=row_unspecified)"
                        ": 1 rows drew an id the oracle masks; rows [3], ids [17136], values [0.42], row max [0.43]",
    "finite_row_dropped": "top_k_top_p-x-bf16-contig: edge rows [(0, EdgeRow(row=243, value='nan', whole=True, "
                          "spot='any', index=225)), (5, EdgeRow(row=239, value='nan', whole=False, spot='any', "
                          "index=21830))], rows [1, 2, 3, 4, 6, 7, 8] (NaN rows unspecified: nan_policy=row_unspecified): "
                          "kept set differs from the oracle at 87 entries (rows [3]); (3, 94): value=-2.515625, oracle "
                          "keeps; (3, 95): value=-2.828125, oracle keeps",
    "finite_row_kept_masked": "top_k_top_p-x-fp32-contig: edge rows [(1, EdgeRow(row=1, value='nan', whole=False, "
                              "spot='max', index=0))]: kept set differs from the oracle at 2 entries (rows [3]); (3, 7): "
                              "value=-2.5, oracle keeps; (3, 9): value=-9.0, oracle masks",
    "inf_row_and_finite_row_dropped": "top_k_top_p-x-bf16-contig: edge rows [(3, EdgeRow(row=739, value='+inf', "
                                      "whole=False, spot='max', index=430)), (6, EdgeRow(row=990, value='-inf', "
                                      "whole=False, spot='any', index=27802))]: kept set differs from the oracle at "
                                      "50277 entries (rows [2, 3]); (2, 12566): value=-3.890625, oracle keeps",
    "inf_row_and_edge_row_dropped": "top_k_top_p-x-bf16-contig: edge rows [(3, EdgeRow(row=739, value='+inf', "
                                    "whole=False, spot='max', index=430)), (6, EdgeRow(row=990, value='-inf', "
                                    "whole=False, spot='any', index=27802))]: kept set differs from the oracle at "
                                    "50277 entries (rows [3, 6]); (6, 12566): value=-3.890625, oracle keeps",
    "edge_row_drawn": "top_k_top_p_sample-x-fp16-contig: edge rows [(1, EdgeRow(row=1, value='-inf', whole=False, "
                      "spot='max', index=0))]: 1 rows drew an id the oracle masks; rows [1], ids [5], values [0.4]",
}


@pytest.mark.parametrize("name, inf_rows, finite_draws, finite_drops", [
    ("inf_row", True, False, False), ("inf_row_renumbered", True, False, False),
    ("finite_row_kept", False, False, False), ("finite_row_drawn", False, True, False),
    ("finite_row_dropped", False, False, True), ("finite_row_kept_masked", False, False, False),
    ("edge_row_drawn", False, False, False), ("inf_row_and_finite_row_dropped", False, False, False),
    ("inf_row_and_edge_row_dropped", False, False, False)])
def test_edge_value_signatures_name_their_rows(name, inf_rows, finite_draws, finite_drops):
    """A signature accepts a failure only in the rows its finding names: kept-set differences
    in rows holding +inf (rows renumbered back where NaN rows were left out), masked ids
    drawn in rows without edge values, or kept ids dropped (none kept that the oracle masks)
    in rows without edge values. The top-p renorm backend's pin accepts its two findings row by
    row, each alone or the two in one case (a +inf row and a finite row), and nothing else."""
    from samplecheck.backends.flashinfer_findings import INF_ROW_MASKED_OR_SHORT_NUCLEUS
    from samplecheck.judging.edge_values import (drew_masked_ids_in_finite_rows, dropped_kept_ids_in_finite_rows,
                                                 kept_set_differs_in_rows_holding)

    failure = EDGE_FAILURES[name]
    assert kept_set_differs_in_rows_holding("+inf")(failure) is inf_rows
    assert drew_masked_ids_in_finite_rows(failure) is finite_draws
    assert dropped_kept_ids_in_finite_rows(failure) is finite_drops
    both = name == "inf_row_and_finite_row_dropped"
    assert INF_ROW_MASKED_OR_SHORT_NUCLEUS[0].witness(failure) is (inf_rows or finite_drops or both)


@pytest.mark.parametrize("test, variant", [(catalog.EDGE_VALUES, "test_edge_values_on_regression_examples"),
                                           (catalog.STRIDED_BITWISE, "test_strided_bitwise_maxima_at_row_ends"),
                                           (catalog.LARGE_OFFSETS, "test_large_offsets_on_each_launch_path"),
                                           (catalog.BATCH_INVARIANCE, "test_batch_invariance_on_each_launch_path"),
                                           (catalog.EDGE_VALUES, "test_edge_values_on_each_launch_path")])
def test_a_property_s_pins_apply_to_its_variants(test, variant):
    """A test that checks a property on other inputs (the regression examples' fixed edge rows;
    the drawn logits with each row's maximum moved to an end of the row; a case at each launch
    path's shape) takes that property's pins (catalog.PROPERTY_OF), and no other test does."""
    import dataclasses

    from samplecheck.registry import matrix
    from samplecheck.registry.records import Mark

    info = matrix.RECORDS["top_k_top_p"]
    pin = Mark("xfail", "finding Z", test=test, witness=lambda failure: False)
    backend = dataclasses.replace(info.backends[0], marks=(pin,))
    combo = matrix.Combo(info, backend, torch.float32, "contig")

    def pinned(test):
        return any(m.name == "finding" for m in matrix._marks(combo, test, backend.devices[0]))

    assert pinned(test) and pinned(variant)
    assert not pinned(catalog.ORACLE_EQUIVALENCE)


UNMASKED_ROW = torch.tensor([[0.5, 2.0, -1.0, 3.0], [1.0, -4.0, 2.0, 0.0], [-1.0, 5.0, 0.0, 1.0]])


@pytest.mark.parametrize("rows, unmasked, signed", [
    ((1,), 1, True), ((0, 2), 2, True), ((1, "partial"), 1, False), (("partial",), 0, False)])
def test_masks_compared_row_by_row(rows, unmasked, signed):
    """Two masked outputs that differ are reported row by row (entries above -inf in each), with
    the count of differing rows that one output left unmasked; the V12 signature
    (`rows_left_unmasked_only`) accepts a failure only when that count is every differing row."""
    from samplecheck.registry.checks import assert_same_masks, rows_left_unmasked_only

    masked = UNMASKED_ROW.clone()
    masked[:, [0, 2]] = float("-inf")
    actual = masked.clone()
    for row in rows:
        if row == "partial":  # one more entry kept: a kept-set difference, not an unmasked row
            actual[0, 0] = UNMASKED_ROW[0, 0]
        else:
            actual[row] = UNMASKED_ROW[row]
    with pytest.raises(AssertionError) as failure:
        assert_same_masks(actual, masked, "cell", 4)
    text = str(failure.value)
    assert f"{unmasked} of {len(rows)} differing rows left unmasked by one output" in text
    assert rows_left_unmasked_only(text) is signed
    assert_same_masks(masked, masked.clone(), "cell", 4)
    assert not rows_left_unmasked_only("cell: 3 of 12 elements differ bitwise; first at [(0, 0)]")


def test_kept_set_difference_counts_rows_left_unmasked():
    """Against the oracle, a kept-set difference says how many of its rows the output returned
    whole (findings V7 and V12 of vLLM's Triton top-p); the signature accepts it only when that
    is every differing row."""
    from samplecheck.registry.checks import assert_masked_like, rows_left_unmasked_only

    kept = torch.tensor([[False, True, False, True], [False, True, True, True], [True, True, False, True]])
    ambiguous = torch.zeros_like(kept)
    unmasked = UNMASKED_ROW.clone()  # row 0 returned whole: its two masked entries kept
    partly = UNMASKED_ROW.masked_fill(~kept, float("-inf"))
    partly[0, 0] = UNMASKED_ROW[0, 0]  # row 0 keeps one entry too many, not the whole row
    for output, signed in ((unmasked.masked_fill(~kept & (torch.arange(3) > 0)[:, None], float("-inf")), True),
                           (partly, False)):
        with pytest.raises(AssertionError) as failure:
            assert_masked_like(UNMASKED_ROW, output, kept, ambiguous, "cell")
        assert "kept set differs from the oracle" in str(failure.value)
        assert rows_left_unmasked_only(str(failure.value)) is signed


@pytest.mark.parametrize("row, signed", [(1, True), (0, False)])
def test_rank_difference_counts_rows_that_sampled_neg_inf(row, signed):
    """A rank difference says in how many of its rows the sampled logit is -inf; finding V1's
    signature (vLLM MRV2's rank of a -inf token) accepts it only when that is every such row."""
    from samplecheck.families.logprobs import logprobs_check, ranks_differ_only_at_neg_inf
    from samplecheck.oracles.logprobs import logprobs_reference

    logits = torch.tensor([[0.0, 1.0, 2.0], [0.0, float("-inf"), 1.0]])
    sampled = torch.tensor([2, 1])
    reference = logprobs_reference(logits, sampled, 0, unit=1e-6)
    ranks = reference.ranks.clone()
    ranks[row] += 5
    output = (sampled[:, None].clone(), reference.log_probs.gather(1, sampled[:, None]).float(), ranks)
    with pytest.raises(AssertionError) as failure:
        logprobs_check(logits, output, reference, "cell")
    assert ranks_differ_only_at_neg_inf(str(failure.value)) is signed


@pytest.mark.parametrize("dropped, underflowed_only, kept_only",
                         [("underflowed", True, True), ("finite", False, True), ("kept", False, False)])
def test_kept_set_difference_counts_rows_dropping_kept_entries(dropped, underflowed_only, kept_only):
    """Against the oracle, a kept-set difference says in how many of its rows the output only
    dropped entries the oracle keeps (finding F6: FlashInfer's top-p with p = 1 loses the smallest
    probabilities), and in how many of those only entries whose probability underflows fp32
    (findings V2 and T5: a top-p = 1 row beside top-p rows loses them). Each signature accepts a
    failure only when its count is every differing row: not where an entry of real probability
    is dropped (the underflow signature), nor where an entry the oracle masks is kept (either)."""
    from samplecheck.registry.checks import assert_masked_like, rows_dropping_kept_only, rows_dropping_underflowed_only

    original = torch.tensor([[0.0, -200.0, -1.0, -300.0], [0.5, 2.0, -1.0, 3.0]])
    kept = torch.tensor([[True, True, True, True], [False, True, False, True]])
    output = original.masked_fill(~kept, float("-inf"))
    if dropped == "underflowed":  # both entries of fp32 probability 0 (e**-200, e**-300)
        output[0, [1, 3]] = float("-inf")
    elif dropped == "finite":  # one of them, and an entry of probability 0.24
        output[0, [1, 2]] = float("-inf")
    else:  # one of them, and an entry the oracle masks kept in another row
        output[0, 1], output[1, 0] = float("-inf"), original[1, 0]
    with pytest.raises(AssertionError) as failure:
        assert_masked_like(original, output, kept, torch.zeros_like(kept), "cell")
    assert rows_dropping_underflowed_only(str(failure.value)) is underflowed_only
    assert rows_dropping_kept_only(str(failure.value)) is kept_only
