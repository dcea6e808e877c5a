"""Properties of gumbel_sample that the generic templates cannot express: the id does not
depend on the launch split (its batch invariance is the generic test_batch_invariance), seeds
and positions drive the noise, greedy rows are torch's lowest argmax, and non-finite entries
are never drawn. Each runs where the backend implements its calls (its `accepts`)."""

import pytest
import torch
import triton
from hypothesis import given, strategies as st

from samplecheck.families.samplers import GumbelCase
from samplecheck.harness.runner import prepare, run
from samplecheck.inputs.drawing import draw_case, skip_unless_accepted
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.registry.semantics import nan_rows_unspecified

pytestmark = [pytest.mark.interpreter, pytest.mark.matrix(kernel="gumbel_sample", layouts=("contig",))]


def _tunable(combo) -> bool:
    """The backend declares the launch knobs block_v / splits (ours and its mutants do)."""
    return {"block_v", "splits"} <= set(combo.backend.knobs)


def _judged_rows(combo, logits: torch.Tensor) -> list[int]:
    """The rows whose id the backend's contract defines: every row, but those holding NaN
    where it declares `nan_policy: row_unspecified`."""
    unjudged = logits.isnan().any(dim=1) & nan_rows_unspecified(combo.info)
    return (~unjudged).nonzero().flatten().tolist()


def _written(logits: torch.Tensor, family: str) -> GumbelCase:
    """A case whose recipe describes hand-written logits (its pools come from the call's
    arguments: `skip_unless_accepted`)."""
    return GumbelCase(LogitsRecipe(*logits.shape, family=family), (0,), (0,), None)


@given(data=st.data())
def test_launch_plans_agree(combo, device, budget, data):
    """Each row's id is the same under other launch splits of the vocabulary (its row alone,
    in other batches: test_batch_invariance)."""
    if not _tunable(combo):
        pytest.skip(f"backend {combo.backend.name} takes no launch knobs (block_v, splits)")
    case = draw_case(data, combo, combo.info.cases(budget))
    placed, args = prepare(combo, case, device)
    logits = placed.view
    ids = run(combo, logits, args)
    # Blocks of a quarter and a half of the (padded) row, three chunks and one: a few
    # interpreted loop steps each, with partial last blocks and chunks. At most 1024 and
    # 2048 lanes: a GPU would compile a row-wide tile (up to 131072) for minutes.
    quarter = max(1, min(triton.next_power_of_2(logits.size(1)) // 4, 1024))
    for block_v, splits in ((quarter, 3), (2 * quarter, 1)):
        again = run(combo, logits, {**args, "block_v": block_v, "splits": splits})
        assert torch.equal(again, ids), (
            f"{combo.id}: block_v={block_v}, splits={splits} drew {again.tolist()}, default launch {ids.tolist()}")


def test_seeds_and_positions_drive_the_noise(combo, device):
    """On flat rows the id is the noise's argmax: the same (seed, position) draws the same id
    (also in another call), while varying the seed at a fixed position, or the position at
    a fixed seed, draws many different ids."""
    n, vocab = 64, 64
    logits = torch.zeros(n, vocab, dtype=combo.dtype, device=device)
    steps = torch.arange(n, dtype=torch.int64, device=device)
    same = torch.full((n,), 42, dtype=torch.int64, device=device)
    for seeds, positions in ((steps * 7919 - 3, same), (same, steps), (same, same)):
        skip_unless_accepted(combo, _written(logits, "flat"), "flat rows at T = 1", logits,
                             {"seeds": seeds, "positions": positions, "temperature": None})
    by_seed = run(combo, logits, {"seeds": steps * 7919 - 3, "positions": same, "temperature": None})
    by_position = run(combo, logits, {"seeds": same, "positions": steps, "temperature": None})
    fixed = run(combo, logits, {"seeds": same, "positions": same, "temperature": None})
    # 64 draws from 64 equally likely ids: fewer than 20 distinct has probability < 1e-9.
    for what, ids in (("seeds", by_seed), ("positions", by_position)):
        distinct = len(set(ids.tolist()))
        assert distinct >= 20, f"{combo.id}: 64 {what} drew only {distinct} distinct ids on flat rows: {ids.tolist()}"
    assert len(set(fixed.tolist())) == 1, f"{combo.id}: one (seed, position) drew different ids: {fixed.tolist()}"
    repeat = run(combo, logits, {"seeds": steps * 7919 - 3, "positions": same, "temperature": None})
    assert torch.equal(repeat, by_seed), f"{combo.id}: a second call with the same seeds drew other ids"


def test_greedy_is_lowest_argmax(combo, device):
    """T == 0 rows on 4 tied levels (ties across block boundaries too) return torch's first
    argmax, whatever the seed; a NaN entry is skipped rather than taken (its row unjudged
    where the backend declares `nan_policy: row_unspecified`)."""
    gen = torch.Generator(device=device).manual_seed(5)
    logits = torch.randint(0, 4, (6, 300), generator=gen, device=device).to(combo.dtype)
    logits[1, :] = 1.0  # every entry tied
    logits[2, 0] = float("nan")
    logits[3, :150] = float("-inf")
    args = {"seeds": torch.arange(6, dtype=torch.int64, device=device) * 1000003,
            "positions": torch.arange(6, dtype=torch.int64, device=device),
            "temperature": torch.zeros(6, dtype=torch.float32, device=device)}
    expected = torch.nan_to_num(logits.float(), nan=float("-inf")).argmax(dim=1)
    skip_unless_accepted(combo, _written(logits, "ties"), "greedy rows", logits, args)
    got = [run(combo, logits, args)]
    if _tunable(combo):
        got += [run(combo, logits, {**args, "block_v": 32, "splits": s}) for s in (1, 4)]
    judged = _judged_rows(combo, logits)
    for ids in got:
        assert torch.equal(ids[judged], expected[judged]), (
            f"{combo.id}: greedy ids {ids.tolist()}, lowest argmax {expected.tolist()} (rows judged {judged})")


def test_non_finite_never_drawn(combo, device):
    """Ids are in [0, V) and never a -inf or NaN entry: rows with one finite entry (at tiny
    and ordinary T, a negative logit far below -65504 after scaling), an all -inf row and an
    all NaN row (id 0), a row with NaNs beside finite entries, and a +inf entry (always drawn);
    the rows holding NaN are unjudged where the backend declares `nan_policy: row_unspecified`."""
    vocab = 200
    logits = torch.full((8, vocab), float("-inf"), dtype=combo.dtype, device=device)
    logits[0, 37] = -3.0
    logits[1, 199] = -3.0
    logits[2, 0] = -100.0
    logits[3, 120] = 2.0
    logits[5] = float("nan")
    logits[6, ::2] = float("nan")
    logits[6, 1::2] = 0.0
    logits[7, :] = 0.0
    logits[7, 150] = float("inf")
    temperature = torch.tensor([1e-5, 1.0, 1e-30, 0.0, 1.0, 1.0, 1.0, 0.5], device=device)
    args = {"seeds": torch.arange(8, dtype=torch.int64, device=device) - 4,
            "positions": torch.full((8,), 11, dtype=torch.int64, device=device), "temperature": temperature}
    skip_unless_accepted(combo, _written(logits, "randn"), "rows of non-finite entries", logits, args)
    ids = run(combo, logits, args)
    expected = {0: 37, 1: 199, 2: 0, 3: 120, 4: 0, 5: 0, 7: 150}
    judged = _judged_rows(combo, logits)
    for row, want in expected.items():
        assert row not in judged or int(ids[row]) == want, (
            f"{combo.id}: row {row} drew {int(ids[row])}, expected {want} (ids {ids.tolist()})")
    assert 6 not in judged or int(ids[6]) % 2 == 1, f"{combo.id}: row 6 drew the NaN entry {int(ids[6])}"


@pytest.mark.matrix(knob="block_v")
def test_launch_knobs_are_checked(combo, device):
    """block_v outside the powers of two in [1, 8192] and splits < 1 raise a ValueError that
    names the knob, before any launch; the ends of the ranges are accepted and draw the
    default launch's ids (the knobs tune the launch only)."""
    logits = torch.arange(16, dtype=torch.float32, device=device).view(2, 8).to(combo.dtype)
    args = {"seeds": torch.tensor([3, 4], device=device), "positions": torch.tensor([5, 6], device=device),
            "temperature": None}
    for knob, value in (("block_v", 3), ("block_v", 16384), ("block_v", 0), ("splits", 0)):
        with pytest.raises(ValueError, match=knob):
            run(combo, logits, {**args, knob: value})
    ids = run(combo, logits, args)
    for knob, value in (("block_v", 1), ("block_v", 8192), ("splits", 1), ("splits", 64)):
        assert torch.equal(run(combo, logits, {**args, knob: value}), ids), f"{combo.id}: {knob}={value}"
