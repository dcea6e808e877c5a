"""Cases of the ops whose arguments are token-id lists: allowed ids, biases and stop ids
(logit_bias), bad words against each row's past (bad_words), and prompt and output
histories (penalties). Each draws its lists from a few ids per row, so that the lists of a
row overlap, matches happen and ids repeat; -1 padding and ignored entries vary the shapes.
"""

import dataclasses
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from samplecheck.families.rows import with_batch
from samplecheck.inputs.pools import MAX_POOL, expand_pool, pool_of, pools, row_pools
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.inputs.strategies import Budget, logits_recipes

ID_DTYPES = (torch.int32, torch.int64)
PAD = -1


def padded(lists: list, width: int, fill, dtype, device) -> torch.Tensor:
    """Ragged lists, each right-padded with `fill` to `width`, as a [len(lists), width]
    tensor on the device."""
    rows = [list(row) + [fill] * (width - len(row)) for row in lists]
    return torch.tensor(rows, dtype=dtype, device=device).reshape(len(lists), width)


def unpadded(ids: torch.Tensor) -> tuple[tuple[int, ...], ...]:
    """Each row of an id list [B, L] without its -1 entries: the ids it names."""
    return tuple(tuple(i for i in row if i != PAD) for row in ids.tolist())


def trimmed(ids: torch.Tensor) -> tuple[tuple[int, ...], ...]:
    """Each row of an id list [B, L] without its trailing -1 padding (a -1 inside stays)."""
    rows = []
    for row in ids.tolist():
        while row and row[-1] == PAD:
            row.pop()
        rows.append(tuple(row))
    return tuple(rows)


# --- allowed_token_ids, logit_bias, min_tokens ----------------------------------------------

F32_MAX = 3.4028234663852886e38
# Bias edges: signed zeros, small, vLLM's clamp (+-100), fp16's max (l + 65504 overflows fp16
# for l >= 16), fp32's max (overflows bf16 after rounding), a subnormal.
BIAS_EDGES = (0.0, -0.0, 1.0, -1.0, 0.5, 100.0, -100.0, 1e-3, 65504.0, F32_MAX, -F32_MAX, 1e-40)
# (min_tokens, output_len): inactive at 0, active while output_len < min_tokens, equality edges.
MIN_TOKENS_EDGES = ((0, 0), (1, 0), (1, 1), (3, 2), (3, 3), (3, 4))
MAX_LIST = 6
ALLOWED_CAP = 1024  # vLLM MRV2's per-request cap on allowed_token_ids, padding included
MAX_PAD = 2  # -1 columns beyond the longest list


@dataclass(frozen=True)
class LogitBiasCase:
    """Logits recipe plus per-row pools (row r takes pool[r % len(pool)]; None: argument absent).

    allowed: allowlists (() is an unrestricted row); bias: (id, bias) lists; min_tokens:
    (stop ids, min_tokens, output_len). Every list is padded with `pad` extra -1 columns
    beyond the longest row; pad positions of logit_bias_values hold NaN (ignored)."""

    logits: LogitsRecipe
    allowed: tuple[tuple[int, ...], ...] | None
    bias: tuple[tuple[tuple[int, float], ...], ...] | None
    min_tokens: tuple[tuple[tuple[int, ...], int, int], ...] | None
    pad: int = 0
    id_dtype: torch.dtype = torch.int64


def bias_values() -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from(BIAS_EDGES), st.floats(-100.0, 100.0, width=32))


def _maybe_pools(values: st.SearchStrategy) -> st.SearchStrategy:
    """A per-row pool, or None (argument absent) less often than `row_pools` alone gives it."""
    return st.one_of(pools(values), row_pools(values))


def spread_ids(vocab: int, hot: list[int]) -> st.SearchStrategy[tuple[int, ...]]:
    """The hot ids plus evenly spaced ones, up to the cap: long allowlists (vllm#46245) for
    little entropy, still overlapping the other lists."""
    return st.builds(lambda start, step, count: tuple(hot) + tuple(range(start, vocab, step))[:count],
                     st.integers(0, vocab - 1), st.integers(1, max(1, vocab // 8)),
                     st.integers(1, ALLOWED_CAP - MAX_PAD - len(hot)))


@st.composite
def logit_bias_cases(draw, budget: Budget) -> LogitBiasCase:
    recipe = draw(logits_recipes(budget))
    # Mostly finite rows, so that biases and masks land on finite entries; -inf entries
    # (in allowlists, under biases) still come from the 0.5 / 0.9 / recipe fractions.
    recipe = dataclasses.replace(recipe, neg_inf_fraction=draw(
        st.sampled_from((0.0, 0.0, 0.0, 0.5, 0.9, recipe.neg_inf_fraction))))
    vocab = recipe.vocab
    # Ids come mostly from a few hot ids (the edges 0 and V-1 among them), so allowlists,
    # biases and stop lists of a row overlap often.
    hot = draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=3)) + [0, vocab - 1]
    token = st.one_of(st.sampled_from(hot), st.sampled_from(hot), st.integers(0, vocab - 1))
    allowed = draw(_maybe_pools(st.one_of(st.lists(token, max_size=MAX_LIST).map(tuple), spread_ids(vocab, hot))))
    bias = draw(_maybe_pools(st.lists(st.tuples(token, bias_values()), max_size=MAX_LIST,
                                unique_by=lambda entry: entry[0]).map(tuple)))
    counts = st.one_of(st.sampled_from(MIN_TOKENS_EDGES), st.tuples(st.integers(0, 6), st.integers(0, 6)),
                       st.integers(0, 6).map(lambda n: (n, n)))
    stops = st.tuples(st.lists(token, max_size=4).map(tuple), counts).map(lambda s: (s[0], *s[1]))
    min_tokens = draw(_maybe_pools(stops))
    pad = draw(st.integers(0, MAX_PAD))
    id_dtype = draw(st.sampled_from((torch.int64, torch.int32)))
    return LogitBiasCase(recipe, allowed, bias, min_tokens, pad, id_dtype)


def _padded_lists(lists: list[tuple], pad: int, fill, dtype, device) -> torch.Tensor:
    """The lists padded with `fill` to `pad` columns beyond the longest."""
    return padded(lists, max(len(row) for row in lists) + pad, fill, dtype, device)


def logit_bias_case_of(case: LogitBiasCase, logits: torch.Tensor, args: dict) -> LogitBiasCase:
    """The case whose arguments are `args`, up to -1 padding (`samplecheck.families.rows.row_args`)."""
    allowed, ids, stops = (args.get(name) for name in ("allowed_token_ids", "logit_bias_ids", "stop_token_ids"))
    bias = None if ids is None else tuple(
        tuple((i, v) for i, v in zip(row, values) if i != PAD)
        for row, values in zip(ids.tolist(), args["logit_bias_values"].tolist()))
    min_tokens = None if stops is None else tuple(zip(unpadded(stops), args["min_tokens"].tolist(),
                                                      args["output_len"].tolist()))
    return dataclasses.replace(with_batch(case, logits), allowed=None if allowed is None else unpadded(allowed),
                               bias=bias, min_tokens=min_tokens)


def logit_bias_args(case: LogitBiasCase, logits: torch.Tensor) -> dict:
    batch, device, args = logits.size(0), logits.device, {}
    if case.allowed is not None:
        args["allowed_token_ids"] = _padded_lists(expand_pool(case.allowed, batch), case.pad, PAD, case.id_dtype,
                                                  device)
    if case.bias is not None:
        rows = expand_pool(case.bias, batch)
        args["logit_bias_ids"] = _padded_lists([[i for i, _ in r] for r in rows], case.pad, PAD, case.id_dtype, device)
        args["logit_bias_values"] = _padded_lists([[b for _, b in r] for r in rows], case.pad, float("nan"),
                                                  torch.float32, device)
    if case.min_tokens is not None:
        rows = expand_pool(case.min_tokens, batch)
        args["stop_token_ids"] = _padded_lists([r[0] for r in rows], case.pad, PAD, case.id_dtype, device)
        args["min_tokens"] = torch.tensor([r[1] for r in rows], dtype=case.id_dtype, device=device)
        args["output_len"] = torch.tensor([r[2] for r in rows], dtype=case.id_dtype, device=device)
    return args


logit_bias_args.case_of = logit_bias_case_of


# --- bad words --------------------------------------------------------------------------
MAX_PAST = 8
MAX_WORDS = 6
MAX_RANDOM_WORD = 4
NEG_INF_FRACTIONS = (0.0, 0.0, 0.0, 0.5)


@dataclass(frozen=True)
class BadWordsRow:
    """One row's parameters: its past, ids stored after the -1 that ends it (ignored by the
    rule), and its words (an empty word is stored as all -1)."""

    past: tuple[int, ...]
    junk: tuple[int, ...]
    words: tuple[tuple[int, ...], ...]


def bad_words_row(past, words, junk=()) -> BadWordsRow:
    """A row written out (regression examples): its past, its words, ids after the past's -1."""
    return BadWordsRow(tuple(past), tuple(junk), tuple(tuple(w) for w in words))


@dataclass(frozen=True)
class BadWordsCase:
    """Logits recipe plus a pool of rows (row r takes rows[r % len(rows)]), the -1 padding
    beyond the longest entry in each dimension, and the id tensors' dtypes."""

    logits: LogitsRecipe
    rows: tuple[BadWordsRow, ...]
    extra_words: int = 0
    extra_tokens: int = 0
    extra_past: int = 0
    words_dtype: torch.dtype = torch.int64
    past_dtype: torch.dtype = torch.int64


def token_ids(vocab: int) -> st.SearchStrategy[int]:
    """An id in [0, V), the first and last ids first."""
    return st.one_of(st.sampled_from((0, vocab - 1)), st.integers(0, vocab - 1))


@st.composite
def words_for(draw, past: tuple[int, ...], alphabet: tuple[int, ...], vocab: int) -> tuple[tuple[int, ...], ...]:
    """Up to MAX_WORDS words against `past`: half built to match its end, the rest near misses
    and other edges."""
    sym = st.sampled_from(alphabet)
    last = st.one_of(sym, token_ids(vocab))
    words: list[tuple[int, ...]] = []
    for _ in range(draw(st.integers(0, MAX_WORDS))):
        kind = "match" if draw(st.booleans()) else draw(st.sampled_from(
            ("near_miss", "too_long", "wrong_offset", "single", "random", "duplicate", "absent")))
        if kind == "near_miss" and past and (len(alphabet) > 1 or vocab > 1):
            n = draw(st.integers(1, len(past)))
            prefix = list(past[len(past) - n:])
            j = draw(st.sampled_from((n - 1, 0)) | st.integers(0, n - 1))  # last and first prefix token first
            others = [a for a in alphabet if a != prefix[j]]
            prefix[j] = draw(st.sampled_from(others) if others else token_ids(vocab).filter(lambda t: t != prefix[j]))
            word = tuple(prefix) + (draw(last),)
        elif kind == "too_long":
            word = (draw(sym),) + past + (draw(last),)
        elif kind == "wrong_offset" and len(past) >= 2:
            n = draw(st.integers(1, len(past) - 1))
            start = draw(st.integers(0, len(past) - n - 1))
            word = past[start:start + n] + (draw(last),)
        elif kind == "single":
            word = (draw(last),)
        elif kind == "random":
            word = tuple(draw(st.lists(sym, min_size=1, max_size=MAX_RANDOM_WORD)))
        elif kind == "duplicate" and words:
            word = draw(st.sampled_from(words))
        elif kind == "absent":
            word = ()
        else:  # match (also the fallback where a kind does not apply)
            n = draw(st.integers(0, len(past)))
            word = past[len(past) - n:] + (draw(last),)
        words.append(word)
    return tuple(words)


@st.composite
def bad_words_rows(draw, vocab: int) -> BadWordsRow:
    # At least two ids where the vocab allows: with one, the start and the end of a past agree.
    alphabet = tuple(draw(st.lists(token_ids(vocab), min_size=min(2, vocab), max_size=4, unique=True)))
    sym = st.sampled_from(alphabet)
    past = tuple(draw(st.lists(sym, max_size=MAX_PAST)))
    junk = tuple(draw(st.one_of(st.just(()), st.lists(sym, min_size=1, max_size=3))))
    return BadWordsRow(past, junk, draw(words_for(past, alphabet, vocab)))


@st.composite
def bad_words_cases(draw, budget: Budget) -> BadWordsCase:
    # Mostly finite rows: a ban on an entry that is already -inf is invisible.
    recipe = draw(logits_recipes(budget))
    recipe = dataclasses.replace(recipe, neg_inf_fraction=draw(st.sampled_from(NEG_INF_FRACTIONS)))
    rows = tuple(draw(st.lists(bad_words_rows(recipe.vocab), min_size=1, max_size=MAX_POOL)))
    pad = st.sampled_from((0, 0, 1, 2))
    return BadWordsCase(recipe, rows, draw(pad), draw(pad), draw(pad),
                        draw(st.sampled_from(ID_DTYPES)), draw(st.sampled_from(ID_DTYPES)))


def _padded(lists: list[list[int]], shape, dtype, device) -> torch.Tensor:
    """Ragged id lists padded with -1 as a tensor of `shape` (one list per row of a 2-D
    shape, per word of a 3-D one)."""
    return padded(lists, shape[-1], PAD, dtype, device).view(shape)


def bad_words_case_of(case: BadWordsCase, logits: torch.Tensor, args: dict) -> BadWordsCase:
    """The case whose arguments are `args`, up to -1 padding (`samplecheck.families.rows.row_args`):
    row r's past, the ids stored after its first -1, and its words (an absent word as ())."""
    rows = []
    for stored, words in zip(args["output_token_ids"].tolist(), args["bad_words"].tolist()):
        end = stored.index(PAD) if PAD in stored else len(stored)
        rows.append(BadWordsRow(tuple(stored[:end]), tuple(i for i in stored[end:] if i != PAD),
                                tuple(tuple(i for i in word if i != PAD) for word in words)))
    return dataclasses.replace(with_batch(case, logits), rows=tuple(rows))


def bad_words_args(case: BadWordsCase, logits: torch.Tensor) -> dict:
    batch = logits.size(0)
    rows = expand_pool(case.rows, batch)
    stored = [list(row.past) + ([PAD] + list(row.junk) if row.junk else []) for row in rows]
    words = max((len(row.words) for row in rows), default=0) + case.extra_words
    tokens = max((len(w) for row in rows for w in row.words), default=0) + case.extra_tokens
    length = max((len(s) for s in stored), default=0) + case.extra_past
    word_lists = [list(row.words[w]) if w < len(row.words) else [] for row in rows for w in range(words)]
    return {"bad_words": _padded(word_lists, (batch, words, tokens), case.words_dtype, logits.device),
            "output_token_ids": _padded(stored, (batch, length), case.past_dtype, logits.device)}


bad_words_args.case_of = bad_words_case_of


# --- penalties: prompt and output histories --------------------------------------------------

# Repetition edges: off (1), typical (1.2, 0.5: boosts), tiny (1e-6, 1e-30: l / r overflows
# bf16/fp16 or fp32), subnormal (1e-40), large (1e6, 1e38: l * r overflows to -inf).
REPETITION_EDGES = (1.2, 1.0, 1.0, 0.5, 2.0, 1e-6, 1e-30, 1e-40, 1e6, 1e38)
# Frequency / presence edges: off (0, -0.0), the bounds, typical, small and negative values.
ADDITIVE_EDGES = (0.5, 0.0, 0.0, -0.0, 2.0, -2.0, -0.5, 1.0, 1e-3, -1e-3)


def max_list_width(budget: Budget) -> int:
    """Longest drawn prompt or output list: interpreter-sized on CPU (a row's lists fit one
    program block; the full-size regression example spans several); on a GPU at most 512,
    so that the kernel's stated host scratch (64 bytes per entry, <= 64 KiB per row) stays
    below an fp32 copy of a row of any real vocab (>= 32000 entries, 128 KB)."""
    return 40 if budget.max_elements <= 2**14 else 512


@dataclass(frozen=True)
class HistoryRecipe:
    """Per-row prompt [B, prompt_width] and output [B, output_width] token lists.

    Row b picks `alphabet` ids in [0, V) (with `edges`, the first two are V - 1 and 0). The
    prompt draws from the first two thirds of them, the output from the last two thirds, so
    a row has prompt-only, shared and output-only ids, with repeats when the lists are longer
    than the alphabet. A `special` share of entries becomes -1 or V (half each), and each
    list keeps a random prefix (lengths 0 .. width), -1 after it.
    """

    prompt_width: int
    output_width: int
    alphabet: int
    special: float
    edges: bool
    dtype: torch.dtype
    seed: int

    def materialize(self, batch: int, vocab: int, device) -> tuple[torch.Tensor, torch.Tensor]:
        gen = torch.Generator(device=device).manual_seed(self.seed)
        size = self.alphabet
        alphabet = torch.randint(0, max(vocab, 1), (batch, size), generator=gen, device=device)
        if self.edges:
            alphabet[:, 0] = vocab - 1
            alphabet[:, min(1, size - 1)] = 0

        def lists(width: int, low: int, high: int) -> torch.Tensor:
            pick = torch.randint(low, high, (batch, width), generator=gen, device=device)
            ids = alphabet.gather(1, pick)
            special = torch.rand(batch, width, generator=gen, device=device) < self.special
            pad = torch.where(torch.rand(batch, width, generator=gen, device=device) < 0.5, -1, vocab)
            ids = torch.where(special, pad, ids)
            length = torch.randint(0, width + 1, (batch, 1), generator=gen, device=device)
            return torch.where(torch.arange(width, device=device) < length, ids, -1).to(self.dtype)

        prompt = lists(self.prompt_width, 0, -(-2 * size // 3))
        return prompt, lists(self.output_width, size // 3, size)


@dataclass(frozen=True)
class FixedHistory:
    """Explicit lists for regression examples: row r takes prompt[r % len] and
    output[r % len], right-padded with -1 to the longest list."""

    prompt: tuple[tuple[int, ...], ...]
    output: tuple[tuple[int, ...], ...]
    dtype: torch.dtype = torch.int64

    def materialize(self, batch: int, vocab: int, device) -> tuple[torch.Tensor, torch.Tensor]:
        def lists(pool) -> torch.Tensor:
            rows = expand_pool(pool, batch)
            return padded(rows, max((len(row) for row in rows), default=0), PAD, self.dtype, device)

        return lists(self.prompt), lists(self.output)


@dataclass(frozen=True)
class PenaltiesCase:
    """Logits recipe, token histories, and per-row pools of penalties (row r takes
    pool[r % len(pool)] of each)."""

    logits: LogitsRecipe
    history: HistoryRecipe | FixedHistory
    repetition: tuple[float, ...]
    frequency: tuple[float, ...]
    presence: tuple[float, ...]


def repetition_values() -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from(REPETITION_EDGES), st.floats(2.0**-4, 2.0**4, width=32))


def additive_values() -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from(ADDITIVE_EDGES), st.floats(-2.0, 2.0, width=32))


def additive_pools() -> st.SearchStrategy[tuple]:
    """A frequency or presence pool: off for the whole batch (the commonest request: only
    repetition, or no penalty of that kind) as often as a drawn pool, whose rows mix values
    and off (a plug-in that implements the repetition penalty alone accepts a case only
    where both pools are off)."""
    return st.one_of(st.just((0.0,)), pools(additive_values()))


@st.composite
def history_recipes(draw, budget: Budget) -> HistoryRecipe:
    """Typical shapes first (Hypothesis starts from the first options): lists of a few dozen
    entries on a small alphabet; empty and single-entry lists, one-id alphabets and lists of
    ignored entries only are edges."""
    longest = max_list_width(budget)
    width = st.sampled_from((longest // 2, longest, 1, 0)) | st.integers(0, longest)
    return HistoryRecipe(prompt_width=draw(width), output_width=draw(width),
                         alphabet=draw(st.sampled_from((6, 1, 2)) | st.integers(1, 64)),
                         special=draw(st.sampled_from((0.1, 0.0, 0.3, 0.1, 0.5, 1.0))), edges=draw(st.booleans()),
                         dtype=draw(st.sampled_from(ID_DTYPES)), seed=draw(st.integers(0, 2**63 - 1)))


@st.composite
def penalties_cases(draw, budget: Budget) -> PenaltiesCase:
    return PenaltiesCase(logits=draw(logits_recipes(budget)), history=draw(history_recipes(budget)),
                         repetition=draw(pools(repetition_values())), frequency=draw(additive_pools()),
                         presence=draw(additive_pools()))


def penalties_case_of(case: PenaltiesCase, logits: torch.Tensor, args: dict) -> PenaltiesCase:
    """The case whose arguments are `args` (`samplecheck.families.rows.row_args`): its lists as a
    FixedHistory, its penalties one pool value per row."""
    history = FixedHistory(trimmed(args["prompt_token_ids"]), trimmed(args["output_token_ids"]),
                           args["prompt_token_ids"].dtype)
    return dataclasses.replace(with_batch(case, logits), history=history,
                               repetition=pool_of(args["repetition_penalty"]),
                               frequency=pool_of(args["frequency_penalty"]), presence=pool_of(args["presence_penalty"]))


def penalties_args(case: PenaltiesCase, logits: torch.Tensor) -> dict:
    batch, vocab = logits.shape
    prompt, output = case.history.materialize(batch, vocab, logits.device)

    def per_row(pool):
        return torch.tensor(expand_pool(pool, batch), dtype=torch.float32, device=logits.device)

    return {"prompt_token_ids": prompt, "output_token_ids": output, "repetition_penalty": per_row(case.repetition),
            "frequency_penalty": per_row(case.frequency), "presence_penalty": per_row(case.presence)}


penalties_args.case_of = penalties_case_of
