"""Registry record for repetition, frequency and presence penalties (sparse, in place).

Token histories are recipes too: a `HistoryRecipe` (list widths, a per-row alphabet, the
share of ignored -1 / V entries, a torch seed) materialises into the prompt and output
lists on the device. Each row draws its lists from one small alphabet (overlapping thirds:
prompt-only, shared and output-only ids), so ids repeat (counts > 1) and occur in both
lists; rows get random lengths (empty lists included) and -1 / V entries anywhere. Penalties come from per-row pools with off values, both signs,
the ±2 bounds and extreme repetition values.
"""

from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from samplecheck.oracles.penalties import PenaltiesReference, penalties_reference
from samplecheck.judging.laws import exact_output_law
from samplecheck.inputs.layouts import LAYOUTS, as_bits
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.harness.registry import ALL_DTYPES, Backend, ErrorInput, KernelInfo, RegressionExample, register, tensor_on, zeros_on
from samplecheck.inputs.strategies import Budget, expand_pool, logits_recipes
from samplecheck.kernels.penalties import SCRATCH_BYTES_PER_ID

ID_DTYPES = (torch.int32, torch.int64)
MAX_POOL = 4
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
            width = max((len(row) for row in rows), default=0)
            padded = [list(row) + [-1] * (width - len(row)) for row in rows]
            return torch.tensor(padded, dtype=self.dtype, device=device).reshape(batch, width)

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


def pools(values: st.SearchStrategy[float]) -> st.SearchStrategy[tuple[float, ...]]:
    return st.lists(values, min_size=1, max_size=MAX_POOL).map(tuple)


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
                         repetition=draw(pools(repetition_values())), frequency=draw(pools(additive_values())),
                         presence=draw(pools(additive_values())))


def penalties_args(case: PenaltiesCase, logits: torch.Tensor) -> dict:
    batch, vocab = logits.shape
    prompt, output = case.history.materialize(batch, vocab, logits.device)

    def per_row(pool):
        return torch.tensor(expand_pool(pool, batch), dtype=torch.float32, device=logits.device)

    return {"prompt_token_ids": prompt, "output_token_ids": output, "repetition_penalty": per_row(case.repetition),
            "frequency_penalty": per_row(case.frequency), "presence_penalty": per_row(case.presence)}


def penalties_ref(logits, semantics, tolerance, **args):
    return penalties_reference(logits, **args, rtol=tolerance)


def penalties_check(original, output, reference: PenaltiesReference, what):
    """Entries outside prompt ∪ output (and whole rows with every penalty off) bitwise the
    input; penalised entries equal to the oracle (assert_close within `rtol`, and bitwise,
    signed zeros included, when rtol is 0)."""
    expected = reference.expected

    def fail_where(wrong: torch.Tensor, problem: str) -> None:
        if bool(wrong.any()):
            where = [tuple(int(i) for i in w) for w in wrong.nonzero()[:5].cpu()]
            detail = [f"{w}: input {float(original[w])!r}, got {float(output[w])!r}, expected "
                      f"{float(expected[w])!r} (output count {int(reference.counts[w])})" for w in where]
            raise AssertionError(f"{what}: {int(wrong.sum())} entries {problem}; " + "; ".join(detail))

    fail_where((as_bits(output) != as_bits(original)) & ~reference.touched,
               "changed outside prompt ∪ output or in rows with every penalty off")
    torch.testing.assert_close(output, expected, rtol=reference.rtol, atol=0.0, equal_nan=True,
                               msg=lambda detail: f"{what}: penalised entries differ from the oracle: {detail}")
    if reference.rtol == 0:
        fail_where(as_bits(output) != as_bits(expected), "differ bitwise from the oracle (signed zeros)")


def _call(logits, prompt, output, repetition, frequency, presence):
    """make(device) for an ErrorInput: each argument is built on the device."""
    return lambda device: ((logits(device),), {
        "prompt_token_ids": prompt(device), "output_token_ids": output(device),
        "repetition_penalty": repetition(device), "frequency_penalty": frequency(device),
        "presence_penalty": presence(device)})


def _ids(rows, dtype=torch.int64):
    return tensor_on(rows, dtype)


_LOGITS = zeros_on(2, 8)
_PROMPT = _ids([[1, 2, -1], [3, 8, -1]])
_OUTPUT = _ids([[1, -1], [-1, 8]])
_R, _F, _Q = tensor_on([1.2, 1.0], torch.float32), tensor_on([0.5, 0.0], torch.float32), tensor_on([0.0, -1.0], torch.float32)
_IDS_RANGE = r"must hold token ids in \[0, 8\) or -1 \(padding\), 8"
_R_RANGE = r"repetition_penalty must be finite and > 0"


def _penalty(value, which):
    """The valid arguments with one penalty replaced by [value, 1 or 0]."""
    bad = tensor_on([value, 1.0 if which == "repetition" else 0.0], torch.float32)
    return _call(_LOGITS, _PROMPT, _OUTPUT, *(bad if which == name else default for name, default in
                                               (("repetition", _R), ("frequency", _F), ("presence", _Q))))


PENALTIES_ERRORS = (
    ErrorInput("1-D logits", _call(zeros_on(8), _PROMPT, _OUTPUT, _R, _F, _Q), ValueError, r"logits must be 2-D"),
    ErrorInput("float64 logits", _call(zeros_on(2, 8, dtype=torch.float64), _PROMPT, _OUTPUT, _R, _F, _Q),
               TypeError, r"logits dtype must be one of float32, bfloat16, float16"),
    ErrorInput("column-strided logits", _call(lambda d: zeros_on(2, 16)(d)[:, ::2], _PROMPT, _OUTPUT, _R, _F, _Q),
               ValueError, r"column stride 1"),
    ErrorInput("prompt id above the pad id", _call(_LOGITS, _ids([[1, 9], [0, -1]]), _OUTPUT, _R, _F, _Q),
               ValueError, r"prompt_token_ids " + _IDS_RANGE + r"; got 9"),
    ErrorInput("output id -2", _call(_LOGITS, _PROMPT, _ids([[1, -2], [0, -1]]), _R, _F, _Q),
               ValueError, r"output_token_ids " + _IDS_RANGE + r"; got -2"),
    ErrorInput("int32 output id far out of range", _call(_LOGITS, _PROMPT, _ids([[2**31 - 1], [0]], torch.int32),
                                                         _R, _F, _Q),
               ValueError, r"output_token_ids " + _IDS_RANGE),
    ErrorInput("float prompt ids", _call(_LOGITS, _ids([[1.0], [2.0]], torch.float32), _OUTPUT, _R, _F, _Q),
               TypeError, r"prompt_token_ids dtype must be one of int32, int64"),
    ErrorInput("1-D output ids", _call(_LOGITS, _PROMPT, _ids([1, 2]), _R, _F, _Q),
               ValueError, r"output_token_ids must have shape \[batch, length\] with batch = 2"),
    ErrorInput("prompt ids of the wrong batch", _call(_LOGITS, _ids([[1, 2]]), _OUTPUT, _R, _F, _Q),
               ValueError, r"prompt_token_ids must have shape \[batch, length\] with batch = 2"),
    ErrorInput("repetition 0", _penalty(0.0, "repetition"), ValueError, _R_RANGE),
    ErrorInput("negative repetition", _penalty(-1.2, "repetition"), ValueError, _R_RANGE),
    ErrorInput("NaN repetition", _penalty(float("nan"), "repetition"), ValueError, _R_RANGE),
    ErrorInput("infinite repetition", _penalty(float("inf"), "repetition"), ValueError, _R_RANGE),
    ErrorInput("frequency above 2", _penalty(2.5, "frequency"), ValueError, r"frequency_penalty must be in \[-2, 2\]"),
    ErrorInput("frequency below -2", _penalty(-2.01, "frequency"), ValueError, r"frequency_penalty must be in \[-2, 2\]"),
    ErrorInput("NaN frequency", _penalty(float("nan"), "frequency"), ValueError, r"frequency_penalty must be in \[-2, 2\]"),
    ErrorInput("presence below -2", _penalty(-3.0, "presence"), ValueError, r"presence_penalty must be in \[-2, 2\]"),
    ErrorInput("NaN presence", _penalty(float("nan"), "presence"), ValueError, r"presence_penalty must be in \[-2, 2\]"),
    ErrorInput("infinite presence", _penalty(float("-inf"), "presence"), ValueError, r"presence_penalty must be in \[-2, 2\]"),
    ErrorInput("float64 frequency", _call(_LOGITS, _PROMPT, _OUTPUT, _R, tensor_on([0.5, 0.0], torch.float64), _Q),
               TypeError, r"frequency_penalty dtype must be one of float32"),
    ErrorInput("repetition of wrong length", _call(_LOGITS, _PROMPT, _OUTPUT, tensor_on([1.2], torch.float32), _F, _Q),
               ValueError, r"repetition_penalty must have shape \[batch\] = \[2\]"),
)


# Six rows on V = 17 (ids 0..16, pad id 17), one per edge:
# 0: repeats in both lists (3 in the prompt twice and the output once, 5 three times in the
#    output), -1 and 17 mixed in; 1: boost (r < 1) with negative f and q on ids 0 and V - 1
#    (a -1 read as V - 1 or 17 as 0 shows); 2: every penalty off; 3: only ignored entries
#    (nothing may change); 4: tiny r (overflows fp16/bf16 for positive logits), prompt-only
#    id 4 and an output id; 5: large r, -1 placeholders inside the output list.
EDGE_HISTORY = FixedHistory(
    prompt=((3, 3, -1, 17, 9), (), (1, 2, 3), (-1, -1), (4, 16), (2,)),
    output=((3, 5, 5, 5, -1, 17), (0, 16, 16), (1, 1), (17, 17, -1), (16,), (7, -1, 7, -1, 6)),
)
EDGE_PENALTIES = dict(repetition=(1.5, 0.5, 1.0, 2.0, 1e-6, 1e30),
                      frequency=(0.5, -2.0, 0.0, 2.0, 2.0, 1e-3),
                      presence=(1.0, -2.0, 0.0, 2.0, -0.5, 0.0))
OPT125M = LogitsRecipe(batch=8, vocab=50272, family="randn", scale=3.0, neg_inf_fraction=0.1, seed=27910)
PENALTIES_REGRESSIONS = (
    RegressionExample("edges on levels 0..3 (zero logits are fixed points of repetition)",
                      PenaltiesCase(LogitsRecipe(batch=6, vocab=17, family="ties", scale=1.0, seed=3),
                                    EDGE_HISTORY, **EDGE_PENALTIES),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    RegressionExample("edges on negative and -inf logits",
                      PenaltiesCase(LogitsRecipe(batch=6, vocab=17, family="randn", scale=3.0,
                                                 neg_inf_fraction=0.5, seed=4),
                                    EDGE_HISTORY, **EDGE_PENALTIES),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    # Full-size rows (opt-125m's vocab 50272 padded to 50304): long lists with -1 and V
    # entries (#27910, #49081), repeats, off rows, int32 ids.
    RegressionExample("full-size padded vocab with long histories",
                      PenaltiesCase(OPT125M, HistoryRecipe(prompt_width=200, output_width=100, alphabet=150,
                                                           special=0.05, edges=True, dtype=torch.int32, seed=49081),
                                    repetition=(1.2, 1.0, 0.8), frequency=(0.5, 0.0, -0.3, 2.0),
                                    presence=(0.5, 0.0)),
                      dtypes=(torch.bfloat16, torch.float32), layouts=("padded64",)),
)


def penalties_scratch(logits, args):
    """The kernel's host scratch: at most SCRATCH_BYTES_PER_ID per entry of the two lists."""
    length = args["prompt_token_ids"].size(1) + args["output_token_ids"].size(1)
    return SCRATCH_BYTES_PER_ID * logits.size(0) * length


PENALTIES = register(KernelInfo(
    name="penalties",
    backends=(Backend("triton", "samplecheck.kernels.penalties:apply_penalties"),),
    cases=penalties_cases,
    make_args=penalties_args,
    reference=penalties_ref,
    check=penalties_check,
    dtypes=ALL_DTYPES,
    # Relative tolerance on penalised entries: none. Each step is one IEEE-rounded fp32
    # operation (div_rn, an explicit fma for l - f * c, a subtraction) and the oracle
    # reproduces every rounding exactly (samplecheck.oracles.penalties), so the check is bitwise.
    tolerance={torch.float32: 0.0, torch.bfloat16: 0.0, torch.float16: 0.0},
    semantics={"repetition": "prompt ∪ output: l / r if l > 0 else l * r", "frequency": "l - f * c_out, one rounding (fma)",
               "presence": "l - q where c_out > 0", "order": "repetition, frequency, presence",
               "counts": "output list only", "ignored_ids": "-1 and V anywhere in either list",
               "precision": "fp32 steps, round-to-nearest-even store", "off_rows": "r == 1, f == 0, q == 0: untouched"},
    error_inputs=PENALTIES_ERRORS,
    examples=PENALTIES_REGRESSIONS,
    law=lambda original, reference, **_: exact_output_law(reference.expected),
    extra_memory=penalties_scratch,
))
