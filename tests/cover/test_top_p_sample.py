"""Our read-only top-p sampler (`samplecheck.kernels.top_p_sample`): its ids are bitwise those of
top-p masking then Gumbel-max sampling (`apply_top_k_top_p` then `gumbel_sample`, the
composition it replaces), and its logits are bitwise unchanged.

Rows the drawn cases rarely hold together: p off, tiny (one candidate after another dropped),
middling and near 1 in one batch; ties (rounded logits, three levels, all equal), NaN and +-inf
entries, NaN, -inf and +inf rows, signed zeros, flat and peaked rows; a mass above a level
exactly at p times the total (the strict predicate); V = 1, a vocab past one tile (+inf
entries one tile apart), every logits dtype, a strided view. Bad values raise the eager error
naming the parameter and change nothing.
"""

import math

import pytest
import torch

from samplecheck.kernels.gumbel import gumbel_sample
from samplecheck.kernels.top_k_top_p import apply_top_k_top_p
from samplecheck.kernels.top_p_sample import CHUNK, LISTED, top_p_sample
from samplecheck.kernels.validation import LOGIT_DTYPES, raise_pending, unchecked_values

pytestmark = pytest.mark.interpreter

# p for a batch's rows (cycled): off, tiny, middling, near 1.
TOP_PS = [0.9, 1.0, 1e-6, 0.5, 0.999, 0.3, 0.99, 0.05]


def _rows(kind: str, batch: int, vocab: int, gen: torch.Generator) -> torch.Tensor:
    x = torch.randn(batch, vocab, generator=gen) * 3
    if kind == "ties":
        x = x.round()
    elif kind == "three_levels":
        x = torch.randint(0, 3, (batch, vocab), generator=gen).float()
    elif kind == "flat":
        x[:] = 0.25
    elif kind == "peaked":
        x = x * 10
    elif kind == "edges" and vocab > 6:
        x[0, :6] = torch.tensor([float("nan"), float("inf"), 0.0, -0.0, float("-inf"), float("nan")])
        x[1 % batch, ::7] = float("nan")
        x[2 % batch] = float("-inf")
        x[3 % batch] = float("nan")
        x[4 % batch, ::5] = float("-inf")
    elif kind == "zeros":
        x[:] = 0.0
        x[:, 1::2] = -0.0
    return x


def _composed(logits, p, seeds, positions):
    return gumbel_sample(apply_top_k_top_p(logits.clone(), None, p), seeds=seeds, positions=positions)


def _assert_samples_as_composed(logits, p, seeds, positions, what):
    bits = torch.int32 if logits.dtype == torch.float32 else torch.int16
    before = logits.clone()
    got = top_p_sample(logits, p, seeds=seeds, positions=positions)
    assert torch.equal(logits.view(bits), before.view(bits)), f"{what}: the logits changed"
    want = _composed(logits, p, seeds, positions)
    assert torch.equal(got, want), f"{what}: ids {got.tolist()}, top-p mask then gumbel_sample {want.tolist()}"


@pytest.mark.parametrize("dtype", LOGIT_DTYPES, ids=str)
@pytest.mark.parametrize("kind", ["randn", "ties", "three_levels", "flat", "peaked", "edges", "zeros"])
@pytest.mark.parametrize("vocab", [1, 7, 300], ids=lambda v: f"V{v}")
def test_samples_as_mask_then_gumbel(dtype, kind, vocab, device):
    batch = 8
    gen = torch.Generator().manual_seed(vocab * 31 + len(kind))
    logits = _rows(kind, batch, vocab, gen).to(dtype).to(device)
    seeds = torch.randint(-2**62, 2**62, (batch,), generator=gen).to(device)
    positions = torch.randint(0, 2**40, (batch,), generator=gen).to(device)
    for shift in range(0, len(TOP_PS), 3):
        p = torch.tensor((TOP_PS[shift:] + TOP_PS)[:batch], device=device)
        _assert_samples_as_composed(logits, p, seeds, positions, f"{kind} rows, V = {vocab}, p = {p.tolist()}")


def test_every_draw_of_a_row_as_composed(device):
    """Many noise draws of one peaked and one flat row at a small p: the rounds that drop one
    candidate after another end where the mask then the sampler do."""
    gen = torch.Generator().manual_seed(7)
    row = torch.randn(40, generator=gen) * 2
    logits = torch.stack([row, torch.zeros(40)]).repeat(64, 1).to(device)
    p = torch.tensor([0.2, 0.05] * 64, device=device)
    seeds = torch.arange(128, dtype=torch.int64, device=device)
    positions = torch.zeros(128, dtype=torch.int64, device=device)
    _assert_samples_as_composed(logits, p, seeds, positions, "128 draws")


def test_a_chunk_list_that_misses_the_winner_above_a_dropped_candidate(device):
    """Two chunks, each with one high entry among low ones, at a p that keeps the high ones
    alone: the row's winner is mostly a low entry (dropped), and a chunk's listed best often
    holds only low entries while its high entry outscores the other chunk's. Its high entry
    is then the result, though no list names it."""
    chunk, listed = CHUNK[device.type], LISTED[device.type]
    high = math.log(chunk / listed)
    row = torch.zeros(2 * chunk)
    row[[chunk // 3, chunk + chunk // 2]] = high
    share = 2 * math.exp(high) / (2 * math.exp(high) + 2 * chunk - 2)
    draws = 256
    logits = row.repeat(draws, 1).to(device)
    p = torch.full((draws,), share / 2, device=device)
    seeds = torch.arange(draws, dtype=torch.int64, device=device)
    positions = torch.zeros(draws, dtype=torch.int64, device=device)
    _assert_samples_as_composed(logits, p, seeds, positions, f"{draws} draws of a two-level row")
    assert set(top_p_sample(logits, p, seeds=seeds, positions=positions).tolist()) == {chunk // 3, chunk + chunk // 2}


def test_mass_exactly_at_the_limit_drops_the_level(device):
    """A row whose mass above its lower level is exactly p times its total in fp32 (the max's
    weight 2**40 against 2**40 + 2 * trunc(exp(ln 0.5) * 2**40), which rounds to 2**41): the
    predicate is strict, so only the max is kept, whichever entry the noise favours."""
    row = torch.tensor([-0.6931472, 0.0, -0.6931472])
    logits = row.repeat(64, 1).to(device)
    seeds = torch.arange(64, dtype=torch.int64, device=device)
    positions = torch.zeros(64, dtype=torch.int64, device=device)
    p = torch.full((64,), 0.5, device=device)
    _assert_samples_as_composed(logits, p, seeds, positions, "mass above the lower level == p * total")
    assert set(top_p_sample(logits, p, seeds=seeds, positions=positions).tolist()) == {1}


def test_strided_rows_and_a_vocab_past_one_tile(device):
    """Rows wider than one tile, so one lane reads several columns: +inf entries one tile
    apart (the lower id wins their tie), and finite rows."""
    width = CHUNK[device.type]
    vocab = width + 5
    gen = torch.Generator().manual_seed(3)
    wide = torch.randn(4, vocab + 9, generator=gen).to(torch.bfloat16)
    wide[3, 4 + 2] = wide[3, 4 + 2 + width] = float("inf")
    logits = wide.to(device)[:, 4:4 + vocab]
    p = torch.tensor([0.9, 0.5, 1.0, 0.5], device=device)
    seeds = torch.tensor([1, 2, 3, 4], dtype=torch.int64, device=device)
    _assert_samples_as_composed(logits, p, seeds, torch.zeros(4, dtype=torch.int64, device=device), "strided rows")
    assert top_p_sample(logits, p, seeds=seeds, positions=torch.zeros(4, dtype=torch.int64, device=device))[3] == 2


def test_empty_batch(device):
    empty = torch.empty(0, 5, device=device)
    ids = top_p_sample(empty, torch.empty(0, device=device), seeds=torch.empty(0, dtype=torch.int64, device=device),
                       positions=torch.empty(0, dtype=torch.int64, device=device))
    assert ids.shape == (0,) and ids.dtype == torch.int64


@pytest.mark.parametrize("bad, match", [
    ({"p": [0.5, 0.0]}, r"p must be in \(0, 1\]"),
    ({"p": [1.5, 0.5]}, r"p must be in \(0, 1\]"),
    ({"positions": [0, -1]}, r"positions must be >= 0"),
    ({"p": None}, r"p must be a float32 tensor"),
])
def test_bad_values_raise_naming_the_parameter(bad, match, device):
    args = {"p": [0.5, 0.9], "positions": [0, 3]} | bad
    logits = torch.randn(2, 9, device=device)
    before = logits.clone()
    p = None if args["p"] is None else torch.tensor(args["p"], device=device)
    with pytest.raises((ValueError, TypeError), match=match):
        top_p_sample(logits, p, seeds=torch.zeros(2, dtype=torch.int64, device=device),
                     positions=torch.tensor(args["positions"], device=device))
        raise_pending()  # a value checked on the device raises here
    assert torch.equal(logits, before)


def test_unchecked_p_outside_its_range_gives_an_id_in_range(device):
    """With the value checks off, p <= 0 or NaN keeps no candidate: the chain, then the
    rounds past it, climb to where nothing lies above the candidate (the row max), and every
    id is in [0, V). Gentle ramps, so that the climb outlasts the chain."""
    vocab = 3 * CHUNK[device.type] + 1
    logits = (torch.arange(vocab) * 1e-3 + torch.arange(4)[:, None]).to(device)
    p = torch.tensor([0.0, -1.0, float("nan"), 0.5], device=device)
    seeds = torch.arange(4, dtype=torch.int64, device=device)
    with unchecked_values():
        ids = top_p_sample(logits, p, seeds=seeds, positions=torch.zeros(4, dtype=torch.int64, device=device))
    assert ((ids >= 0) & (ids < vocab)).all(), ids.tolist()
    assert ids[:3].tolist() == logits[:3].argmax(dim=1).tolist(), "nothing kept but the row max"
