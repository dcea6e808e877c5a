"""A row's outputs do not depend on the batch around it (the promise of engines' deterministic
modes, vLLM's VLLM_BATCH_INVARIANT among them), bitwise, with the same per-row parameters (a
sampler's seeds and positions travel with their row):
- 8 drawn rows (or all, if fewer) of a drawn case run in small batches of 1 to 3 rows, and every row at
  another index of the batch reversed and doubled, give what they gave in the drawn batch;
- a wide batch of fresh rows (the case's recipe under another seed, 2 to 1025 rows, up to
  twice the budget's batch and elements, each row with the parameters of a row of the case)
  gives, in 8 drawn rows, what those rows give in small batches.
The drawn case's batch has any size the record's strategy draws, the wide batch a size just
past a power of two, and the rows compared sit anywhere in their batch, so the nightly's
thousand examples per cell search sizes and positions for a rare threshold.
Launch plans change their tiles and splits with the batch size; a reduction whose order
follows the plan changes a row's last bits only in some rows, so the property looks at many
rows under the plans of both ends, one to three rows and many. Drawn sizes reach a GPU's
launch paths only by chance (top-k's k split takes 33 to 128 rows of 8192 columns or more, k
alone): `test_batch_invariance_on_each_launch_path` moves the drawn case to each path a backend
declares (`Backend.path_shapes`, `Backend.path_parameters`) and compares drawn rows there with
the same rows in small batches.

A backend declares it (`Backend.batch_invariant`, a plug-in's `batch_invariant`): True, and a
difference fails, naming the rows, both batch sizes and the first differing element; False,
and the test is skipped (e.g. a sampler drawing every row from one generator); undeclared, and
the property measures it: the test passes, with a `BatchVariance` warning naming the first
difference it found, which the sweep and nightly reports show in the cell (user property
`measured`). Rows the backend leaves unspecified (NaN rows under `nan_policy:
row_unspecified`) are not compared."""

import dataclasses
import warnings

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from samplecheck.harness.call_inputs import cut_rows
from samplecheck.harness.results import MEASURED
from samplecheck.harness.runner import prepare, run
from samplecheck.inputs.drawing import draw_case, skip_unless_accepted
from samplecheck.registry.checks import assert_same_output, output_rows
from samplecheck.registry.matrix import RECORDS, Combo
from samplecheck.registry.semantics import nan_rows_unspecified
from samplecheck.tests.cover.draw_order import DrawOrder
from samplecheck.tests.cover.launch_paths import on_each_path

pytestmark = pytest.mark.interpreter

# Sizes of the wide batch: odd, so they sit just past the power-of-two thresholds of tiles
# and splits.
WIDE_BATCHES = (3, 5, 9, 17, 33, 65, 129, 257, 513, 1025)
SMALL_ROWS = 8  # rows of a batch (drawn anywhere in it) also run in small batches


class BatchVariance(UserWarning):
    """A backend that does not declare batch invariance gave a row different outputs in
    different batches (test_batch_invariance's report)."""


@pytest.mark.matrix(layouts=("contig",))
@given(data=st.data())
# record_property only appends to the test's user properties: the same for every example.
@settings(suppress_health_check=(*settings().suppress_health_check, HealthCheck.function_scoped_fixture))
def test_batch_invariance(combo, device, budget, data, record_property):
    if combo.backend.batch_invariant is False:
        pytest.skip(f"backend {combo.backend.name} declares that its rows depend on their batch")
    # Every choice is drawn before the first tensor is built (samplecheck.inputs.drawing): what
    # the calls do (an OOM, a difference found and returned) never changes what an example draws.
    case = draw_case(data, combo, combo.info.cases(budget).filter(lambda c: c.logits.batch >= 2))
    batch, vocab = case.logits.batch, case.logits.vocab
    small = data.draw(st.integers(1, 3), label="small batches' size")
    fitting = [n for n in WIDE_BATCHES if n <= 2 * budget.max_batch + 1 and n * vocab <= 2 * budget.max_elements]
    wide = data.draw(st.sampled_from(fitting or WIDE_BATCHES[:1]), label="wide batch")
    seed = data.draw(st.integers(0, 2**31 - 1), label="fresh rows' seed")
    positions = [_compared_rows(data, size) for size in (batch, wide)]
    placed, args = prepare(combo, case, device)
    fresh = dataclasses.replace(case, logits=dataclasses.replace(case.logits, batch=wide, seed=seed))
    fresh_placed, _ = prepare(combo, fresh, device)
    fresh_args = cut_rows(args, torch.arange(wide) % batch, batch)
    reversed_doubled = {"the batch reversed and doubled": torch.arange(batch - 1, -1, -1).repeat(2)}
    for logits, rows_args, others, rows in ((placed.view, args, reversed_doubled, positions[0]),
                                            (fresh_placed.view, fresh_args, {}, positions[1])):
        difference = _same_rows(combo, case, logits, rows_args, {**others, **_small_batches(rows, small)}, vocab)
        if difference is not None:
            warnings.warn(BatchVariance(difference))
            record_property(MEASURED, difference)
            return


@pytest.mark.matrix(layouts=("contig",), launch_paths=True)
@given(data=st.data())
def test_batch_invariance_on_each_launch_path(combo, device, budget, data):
    """At each launch path the backend declares on this device (`Backend.path_shapes`, given
    `Backend.path_parameters`; the path taken is asserted first), drawn rows of the drawn case
    moved to the path's shape give what they give in batches of 1 to 3 rows, which take other
    paths or other plans: every path finds the same outputs, bitwise."""
    case = draw_case(data, combo, combo.info.cases(budget))
    small = data.draw(st.integers(1, 3), label="small batches' size")
    positions = {path: _compared_rows(data, by_device[device.type][0])
                 for path, by_device in combo.backend.path_shapes.items()}
    for path, at_path in on_each_path(combo, case, device):
        placed, args = prepare(combo, at_path, device)
        _same_rows(combo, at_path, placed.view, args, _small_batches(positions[path], small), at_path.logits.vocab)


@given(data=st.data())
@settings(max_examples=3)
def test_every_choice_is_drawn_before_the_first_tensor(device, budget, data):
    """The property's draws come before its inputs are built and its calls made (a
    temperature backend in plain PyTorch, the cheapest here): what the calls do cannot
    change what an example draws."""
    info = RECORDS["temperature"]
    combo = Combo(info, next(b for b in info.backends if b.name == "torch"), torch.float32, "contig")
    order = DrawOrder(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(globals(), "prepare", order.device(prepare, "prepare"))
        patch.setitem(globals(), "run", order.device(run, "run"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BatchVariance)
            test_batch_invariance.hypothesis.inner_test(combo, device, budget, order, lambda *_: None)
    assert "run" in order.steps
    assert order.draws_after_device() == [], order.steps


def _compared_rows(data, size: int) -> list[int]:
    """SMALL_ROWS distinct rows (all, if fewer) of a batch of `size`, in drawn order: those run
    in small batches."""
    compared = min(size, SMALL_ROWS)
    return data.draw(st.lists(st.integers(0, size - 1), min_size=compared, max_size=compared, unique=True),
                     label=f"rows of the batch of {size} run in small batches")


def _small_batches(positions: list[int], small: int) -> dict:
    """The rows at `positions`, as batches of `small` rows in that order, by name."""
    return {f"a batch of rows {positions[start:start + small]}": torch.tensor(positions[start:start + small])
            for start in range(0, len(positions), small)}


def _listed(rows: list[int], ends: int = 4) -> str:
    """`rows` as a list, its middle elided past 2 * `ends` entries (a wide batch has thousands)."""
    if len(rows) <= 2 * ends:
        return str(rows)
    head, tail = ", ".join(map(str, rows[:ends])), ", ".join(map(str, rows[-ends:]))
    return f"[{head}, ... ({len(rows) - 2 * ends} more), {tail}]"


def _same_rows(combo, case, logits: torch.Tensor, args: dict, batches: dict, vocab: int) -> str | None:
    """Whether each of `batches` (rows of `logits`, their parameters taken along; `case`, the
    drawn case they came from, tells the backend's `accepts` what they are) gives its rows
    the outputs they have in `logits`' own batch: a difference fails the test of a backend
    declaring batch invariance, and is returned (its description) for one that declares
    nothing; None when every row agrees."""
    size = logits.size(0)
    skip_unless_accepted(combo, case, f"a batch of {size} rows", logits, args)
    whole = run(combo, logits.clone(), args)
    judged = ~(logits.isnan().any(dim=1) & nan_rows_unspecified(combo.info)).cpu()
    for what, index in batches.items():
        part_args = cut_rows(args, index, size)
        part = logits[index.to(logits.device)].contiguous()
        skip_unless_accepted(combo, case, what, part, part_args)
        output = run(combo, part, part_args)
        kept = [j for j, source in enumerate(index.tolist()) if judged[source]]
        sources = index[kept].tolist()
        try:
            assert_same_output(combo.info, output_rows(output, kept), output_rows(whole, sources),
                               f"{combo.id}: rows {_listed(sources)} of a batch of {size} (positions below index "
                               f"this list), in {what} ({index.numel()} rows)", vocab)
        except AssertionError as err:
            if combo.backend.batch_invariant:
                raise
            return f"not declared batch invariant, and it is not: {err}"
    return None
