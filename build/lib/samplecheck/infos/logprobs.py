"""Registry record for logprobs (sampled token + top-k / whole-vocab log_softmax, not in place)."""

from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from samplecheck.oracles.logprobs import LogprobsReference, error_bound, logprobs_reference
from samplecheck.inputs.layouts import LAYOUTS
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.harness.registry import ALL_DTYPES, Backend, ErrorInput, KernelInfo, RegressionExample, register, tensor_on, zeros_on
from samplecheck.inputs.strategies import Budget, expand_pool, logits_recipes

# How a row's sampled token is chosen from its logits: the last of the tied maxima, the last
# minimum (-inf where the row has one), the first -inf entry (else the minimum), the last
# entry holding the largest finite value that occurs twice or more (a tie: its rank counts
# every copy), or the id at a fraction of the vocab.
PICKS = ("max", "min", "neg_inf", "tie")
MAX_POOL = 4
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
    picks = draw(st.lists(pick, min_size=1, max_size=MAX_POOL).map(tuple))
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


def logprobs_ref(logits, semantics, tolerance, *, sampled, num_logprobs):
    return logprobs_reference(logits, sampled, num_logprobs, unit=tolerance)


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
    of the fp64 log_softmax at the returned ids."""
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
    torch.testing.assert_close(ranks, reference.ranks, rtol=0, atol=0,
                               msg=lambda m: f"{what}: ranks (count of x >= x_sampled) differ: {m}")
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


def logprobs_extra_memory(logits, args) -> int:
    """Bytes beyond the inputs (samplecheck.kernels.logprobs docstring): the outputs (int64 and fp32
    [B, n + 1], int64 [B]); for k >= 1 torch.topk's values and ids [B, k], counted twice, and
    its workspace, bounded by a sort's ([B, V] values and int64 ids); for n = -1 the int64
    arange of the vocab. Nothing of size [B, V] but the
    n = -1 output itself."""
    num_logprobs = args["num_logprobs"]
    if num_logprobs is None:
        return 0
    batch, vocab = logits.shape
    n = vocab if num_logprobs == -1 else num_logprobs
    # torch.topk: its [B, k] values and ids, counted twice, plus its selection workspace, which
    # torch does not document: on an H200 (torch 2.11) 8.4 bytes per vocab entry at B = 15,
    # V = 32000 and 22.9 at B = 9, V = 50257, so the bound is what a sort-based top-k may
    # allocate, values and int64 ids of the whole [B, V].
    topk = 2 * batch * n * (logits.element_size() + 8) + batch * vocab * (logits.element_size() + 8) \
        if num_logprobs >= 1 else 0
    return batch * (n + 1) * (8 + 4) + 8 * batch + topk + (8 * vocab if num_logprobs == -1 else 0)


def _call(logits, sampled, num_logprobs=2, **extra):
    """make(device) for an ErrorInput: each tensor argument is built on the device."""
    return lambda device: ((logits(device),), {"sampled": sampled(device), "num_logprobs": num_logprobs, **extra})


_ROW = tensor_on([1, 2], torch.int64)
_N_RANGE = r"num_logprobs must be None, -1 \(whole vocab\), 0 \(sampled token only\) or in \[1, vocab = 8\]"
_N_TYPE = r"num_logprobs must be None or an int in \[-1, vocab\]"
_IDS = r"sampled must hold token ids in \[0, 8\)"
_GATHER = r"gather_block must be a power of two in \[16, 1024\]"
LOGPROBS_ERRORS = (
    ErrorInput("1-D logits", _call(zeros_on(8), tensor_on([1], torch.int64)), ValueError, r"logits must be 2-D"),
    ErrorInput("float64 logits", _call(zeros_on(2, 8, dtype=torch.float64), _ROW),
               TypeError, r"logits dtype must be one of float32, bfloat16, float16"),
    ErrorInput("column-strided logits", _call(lambda d: zeros_on(2, 16)(d)[:, ::2], _ROW), ValueError,
               r"column stride 1"),
    ErrorInput("int32 sampled", _call(zeros_on(2, 8), tensor_on([1, 2], torch.int32)), TypeError,
               r"sampled dtype must be one of int64"),
    ErrorInput("float sampled", _call(zeros_on(2, 8), tensor_on([1.0, 2.0], torch.float32)), TypeError,
               r"sampled dtype must be one of int64"),
    ErrorInput("sampled of wrong length", _call(zeros_on(2, 8), tensor_on([1, 2, 3], torch.int64)), ValueError,
               r"sampled must have shape \[batch\] = \[2\]"),
    ErrorInput("sampled id = V", _call(zeros_on(2, 8), tensor_on([1, 8], torch.int64)), ValueError, _IDS),
    ErrorInput("sampled id -1", _call(zeros_on(2, 8), tensor_on([-1, 2], torch.int64)), ValueError, _IDS),
    ErrorInput("num_logprobs -2", _call(zeros_on(2, 8), _ROW, -2), ValueError, _N_RANGE),
    ErrorInput("num_logprobs V + 1", _call(zeros_on(2, 8), _ROW, 9), ValueError, _N_RANGE),
    ErrorInput("float num_logprobs", _call(zeros_on(2, 8), _ROW, 2.0), TypeError, _N_TYPE),
    ErrorInput("bool num_logprobs", _call(zeros_on(2, 8), _ROW, True), TypeError, _N_TYPE),
    ErrorInput("tensor num_logprobs", _call(zeros_on(2, 8), _ROW, torch.tensor(2)), TypeError, _N_TYPE),
    ErrorInput("gather_block 3", _call(zeros_on(2, 8), _ROW, gather_block=3), ValueError, _GATHER,
               knob="gather_block"),
    ErrorInput("gather_block 2048", _call(zeros_on(2, 8), _ROW, gather_block=2048), ValueError, _GATHER,
               knob="gather_block"),
)


LOGPROBS_REGRESSIONS = (
    # Ties: 4 levels per row, sampled at a tied value, the max's last copy and the min; top-5
    # cuts through the top level's ties (any 5 of them are admissible; a `>` rank counts
    # none of the sampled token's ties).
    RegressionExample("edges: tied values, top-k cutting a tie, ranks with ties",
                      LogprobsCase(LogitsRecipe(batch=4, vocab=1019, family="ties", scale=1.0, seed=21), 5,
                                   ("tie", "max", "min", 0.5)),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    # Whole vocab over three gather steps with half the entries -inf, sampled at a -inf id
    # (logprob -inf, rank V).
    RegressionExample("edges: num_logprobs -1 over 3 gather steps, -inf sampled",
                      LogprobsCase(LogitsRecipe(batch=3, vocab=2053, family="randn", scale=3.0,
                                                neg_inf_fraction=0.5, seed=22), -1, ("neg_inf", "max", 0.25)),
                      dtypes=ALL_DTYPES, layouts=("contig", "stride+37")),
    # One dominant token per row, about 120 above the rest (scale 10), past the first
    # 1024-entry block in every row: a max taken from the first block only leaves exp(l - m)
    # 98 and 107 above it in rows 0 and 1, which overflows fp32 (e^88.7).
    RegressionExample("wide rows: the max outside the first block",
                      LogprobsCase(LogitsRecipe(batch=4, vocab=8193, family="peaked", scale=10.0, seed=27), 3,
                                   ("max", 0.9, "min", "tie")),
                      dtypes=ALL_DTYPES, layouts=("contig", "padded64")),
)

LOGPROBS = register(KernelInfo(
    name="logprobs",
    backends=(Backend("triton", "samplecheck.kernels.logprobs:compute_logprobs", knobs=("gather_block",)),),
    cases=logprobs_cases,
    make_args=logprobs_args,
    reference=logprobs_ref,
    check=logprobs_check,
    dtypes=ALL_DTYPES,
    # The unit of samplecheck.oracles.logprobs.error_bound: 2u (u = 2**-24, fp32 unit roundoff, doubled
    # for GPU approximate exp/log); the same for every logits dtype, since values upcast
    # exactly and the computation is fp32.
    tolerance={torch.float32: 2**-23, torch.bfloat16: 2**-23, torch.float16: 2**-23},
    semantics={"columns": "sampled token, then top-k ids (k >= 1) or ids 0..V-1 (-1)",
               "tie_policy": "top-k: any ids tied with the k-th value, compared as sets",
               "rank": "count(x >= x_sampled), 1-based, ties against the sampled token",
               "all_neg_inf_row": "NaN logprobs, rank V",
               "precision": "fp32 log_softmax (max, blocked sum of exp, lse), exact ids and ranks"},
    error_inputs=LOGPROBS_ERRORS,
    examples=LOGPROBS_REGRESSIONS,
    in_place=False,
    extra_memory=logprobs_extra_memory,
))
