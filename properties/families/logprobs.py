"""The logprobs family: the sampled token's and the top-k (or whole-vocab) log_softmax, not
in place, judged exactly on ids and ranks (top-k tie-aware) and within the fp32 error
bound of `samplecheck.oracles.logprobs` on values. Also its cases: which token a row
"sampled" (`PICKS`: maxima, minima, -inf entries, ties, any position) and num_logprobs at
the gather-step edges.
"""

from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.inputs.pools import expand_pool, pools
from samplecheck.inputs.strategies import Budget, logits_recipes
from samplecheck.oracles.logprobs import LogprobsReference, error_bound
from samplecheck.registry.checks import every_differing_row

# How a row's sampled token is chosen from its logits: the last of the tied maxima, the last
# minimum (-inf where the row has one), the first -inf entry (else the minimum), the last
# entry holding the largest finite value that occurs twice or more (a tie: its rank counts
# every copy), or the id at a fraction of the vocab.
PICKS = ("max", "min", "neg_inf", "tie")
# Gather-step edges: n + 1 columns just below, at and above one or two 1024-column steps.
GATHER_EDGES = (1022, 1023, 1024, 1025, 2047, 2048)


@dataclass(frozen=True)
class LogprobsCase:
    """Logits recipe, the batch's num_logprobs, and a per-row pool of sampled-token picks
    (row r takes picks[r % len(picks)]: a PICKS name or a position fraction in [0, 1))."""

    logits: LogitsRecipe
    num_logprobs: int | None
    picks: tuple


def num_logprobs_values(vocab: int) -> st.SearchStrategy:
    """None, 0, -1, 1, V - 1, V, the gather edges, and any small k."""
    edges = [None, 0, -1, 1, max(vocab - 1, 0), vocab] + [k for k in GATHER_EDGES if k <= vocab]
    return st.one_of(st.sampled_from(edges), st.integers(1, min(vocab, 64)))


@st.composite
def logprobs_cases(draw, budget: Budget, max_vocab: int | None = None) -> LogprobsCase:
    recipe = draw(logits_recipes(budget, max_vocab))
    num_logprobs = draw(num_logprobs_values(recipe.vocab))
    pick = st.one_of(st.sampled_from(PICKS), st.floats(0.0, 1.0, exclude_max=True))
    picks = draw(pools(pick))
    return LogprobsCase(recipe, num_logprobs, picks)


def _last_where(mask: torch.Tensor) -> torch.Tensor:
    """Per row, the last column where `mask` holds (-1 where it never does)."""
    cols = torch.arange(mask.size(1), device=mask.device)
    return torch.where(mask, cols, -1).amax(dim=1)


def sampled_ids(logits: torch.Tensor, picks: list) -> torch.Tensor:
    """int64 [B]: row r's id chosen by picks[r] (see PICKS), computed for all rows at once."""
    x = logits.to(torch.float64)
    batch, vocab = x.shape
    neg_inf = x == float("-inf")
    top = _last_where(x == x.amax(dim=1, keepdim=True))
    bottom = _last_where(x == x.amin(dim=1, keepdim=True))
    first_neg_inf = torch.where(neg_inf.any(dim=1), neg_inf.int().argmax(dim=1), bottom)
    # "tie": the largest finite value held by two entries or more (else the max).
    ordered = x.sort(dim=1, descending=True).values
    repeats = torch.zeros_like(neg_inf)
    repeats[:, 1:] = (ordered[:, 1:] == ordered[:, :-1]) & torch.isfinite(ordered[:, 1:])
    first_repeat = ordered.gather(1, repeats.int().argmax(dim=1, keepdim=True))[:, 0]
    tied_value = torch.where(repeats.any(dim=1), first_repeat, ordered[:, 0])
    tie = _last_where(x == tied_value[:, None])
    named = torch.stack([{"max": top, "min": bottom, "neg_inf": first_neg_inf, "tie": tie}[name] for name in PICKS])
    kind = torch.tensor([0 if isinstance(p, float) else PICKS.index(p) for p in picks], device=x.device)
    position = torch.tensor([int(p * vocab) if isinstance(p, float) else -1 for p in picks], device=x.device)
    return torch.where(position >= 0, position, named.gather(0, kind[None])[0]).to(torch.int64)


def logprobs_args(case: LogprobsCase, logits: torch.Tensor) -> dict:
    return {"sampled": sampled_ids(logits, expand_pool(case.picks, logits.size(0))),
            "num_logprobs": case.num_logprobs}


def _rows(mask: torch.Tensor) -> list[int]:
    """The first rows (dimension 0) where `mask` is set."""
    return sorted({int(r) for r in mask.nonzero()[:, 0].cpu()})[:10]


def _check_top_k(x: torch.Tensor, top: torch.Tensor, kth: torch.Tensor, what: str) -> None:
    """Columns 1..k: distinct in-range ids, non-increasing values, every value above the
    k-th largest present, the rest tied with it (any tied ids, in any order)."""
    vocab = x.size(1)
    out_of_range = (top < 0) | (top >= vocab)
    assert not bool(out_of_range.any()), f"{what}: top-k ids outside [0, {vocab}) in rows {_rows(out_of_range)}"
    ordered = top.sort(dim=1).values
    repeated = ordered[:, 1:] == ordered[:, :-1]
    assert not bool(repeated.any()), f"{what}: repeated top-k ids in rows {_rows(repeated)}"
    values = x.gather(1, top)
    rising = values[:, 1:] > values[:, :-1]
    assert not bool(rising.any()), f"{what}: top-k values not in non-increasing order in rows {_rows(rising)}"
    below = values < kth[:, None]
    assert not bool(below.any()), f"{what}: top-k ids below the k-th largest value in rows {_rows(below)}"
    missing = (values > kth[:, None]).sum(dim=1) != (x > kth[:, None]).sum(dim=1)
    assert not bool(missing.any()), (
        f"{what}: top-k misses ids above the k-th largest value in rows {_rows(missing)}")


def logprobs_check(original, output, reference: LogprobsReference, what):
    """ids and ranks exact (top-k tie-aware), logprobs within `samplecheck.oracles.logprobs.error_bound`
    of the fp64 log_softmax at the returned ids. A rank difference says in how many of its rows
    the sampled token's logit is -inf (`ranks_differ_only_at_neg_inf`, a pin's signature)."""
    if reference.num_logprobs is None:
        assert output is None, f"{what}: num_logprobs=None must return None, got {type(output).__name__}"
        return
    batch, vocab = original.shape
    n = vocab if reference.num_logprobs == -1 else reference.num_logprobs
    token_ids, logprobs, ranks = output
    for name, t, dtype, shape in (("token_ids", token_ids, torch.int64, (batch, n + 1)),
                                  ("logprobs", logprobs, torch.float32, (batch, n + 1)),
                                  ("ranks", ranks, torch.int64, (batch,))):
        assert t.dtype == dtype and tuple(t.shape) == shape and t.device == original.device, (
            f"{what}: {name} is {t.dtype} {tuple(t.shape)} on {t.device}, expected {dtype} {shape} "
            f"on {original.device}")
    wrong = token_ids[:, 0] != reference.sampled
    assert not bool(wrong.any()), f"{what}: column 0 is not the sampled token in rows {_rows(wrong)}"
    x = original.to(torch.float64)
    if reference.num_logprobs == -1:
        wrong = token_ids[:, 1:] != torch.arange(vocab, device=token_ids.device)
        assert not bool(wrong.any()), f"{what}: num_logprobs=-1 columns are not ids 0..V-1 in rows {_rows(wrong)}"
    elif n >= 1:
        _check_top_k(x, token_ids[:, 1:], reference.kth, what)
    wrong = ranks != reference.ranks
    if bool(wrong.any()):
        rows = _rows(wrong)
        at_neg_inf = wrong & (x.gather(1, reference.sampled[:, None].to(torch.int64))[:, 0] == float("-inf"))
        raise AssertionError(
            f"{what}: ranks (count of x >= x_sampled) differ in rows {rows}: got {ranks[rows].tolist()}, expected "
            f"{reference.ranks[rows].tolist()}; {int(at_neg_inf.sum())} of {int(wrong.sum())} differing rows "
            f"sampled a -inf logit")
    expected = reference.log_probs.gather(1, token_ids)
    bound = error_bound(reference, expected)

    def describe(message: str) -> str:
        excess = ((logprobs.double() - expected).abs() / bound).nan_to_num(float("inf"))
        worst = [tuple(int(i) for i in w) for w in (excess > 1).nonzero()[:5].cpu()]
        detail = "; ".join(f"{w}: id {int(token_ids[w])}, got {float(logprobs[w])!r}, fp64 {float(expected[w])!r}, "
                           f"bound {float(bound[w]):.3g}" for w in worst)
        return f"{what}: logprobs differ from the fp64 log_softmax beyond the bound (scaled by it): {detail}\n{message}"

    torch.testing.assert_close(logprobs.double() / bound, expected / bound, rtol=0, atol=1, equal_nan=True,
                               msg=describe)


def logprobs_memory(logits, args) -> int:
    """Bytes beyond the inputs (samplecheck.kernels.logprobs docstring): the outputs (int64 and fp32
    [B, n + 1], int64 [B]); for k >= 1 torch.topk's values and ids [B, k], counted twice, and
    its workspace, up to four sorts' ([B, V] values and int64 ids, finding F13); for n = -1 the
    int64 arange of the vocab. Nothing of size [B, V] but the n = -1 output itself."""
    num_logprobs = args["num_logprobs"]
    if num_logprobs is None:
        return 0
    batch, vocab = logits.shape
    n = vocab if num_logprobs == -1 else num_logprobs
    # torch.topk: its [B, k] values and ids, counted twice, plus its selection workspace, which
    # torch does not document: on an H200 (torch 2.11) 8.4 bytes per vocab entry at B = 15,
    # V = 32000 and 22.9 at B = 9, V = 50257, but 3.6 sorts' worth (values and int64 ids of the
    # whole [B, V]) at k = V - 1 (B = 15, V = 151936; finding F13), so the bound is four sorts'.
    topk = 2 * batch * n * (logits.element_size() + 8) + 4 * batch * vocab * (logits.element_size() + 8) \
        if num_logprobs >= 1 else 0
    return batch * (n + 1) * (8 + 4) + 8 * batch + topk + (8 * vocab if num_logprobs == -1 else 0)


# `logprobs_check`'s rank difference, every row whose rank differs one that sampled a -inf logit.
ranks_differ_only_at_neg_inf = every_differing_row("sampled a -inf logit")
