"""Reference for repetition, frequency and presence penalties: the correctly rounded fp32
result of each step, computed exactly in fp64.

Semantics (what every penalties backend is checked against):
- Input: logits [B, V] in fp32/bf16/fp16 (the exact values, upcast), prompt and output
  token-id lists [B, P] and [B, O], per-row float32 penalties r > 0 (repetition, 1: off),
  f and q in [-2, 2] (frequency and presence, 0: off).
- Ids: only ids in [0, V) count. In the prompt list, -1 (padding) and V (the pad id) are
  ignored wherever they appear. The output list is the generated history: it ends at its
  first -1 (padding, or async placeholders for tokens not known yet, vLLM #27910), and
  every later entry is ignored, the same rule as bad words' past; V is ignored anywhere.
  Other ids are invalid input (the kernel raises), never wrapped around or clamped.
- Sets: repetition applies to every id in prompt ∪ output; c(t) counts t's occurrences in
  the output list only (the prompt never counts).
- Per row, for each t in prompt ∪ output, in this order, each step rounded to fp32
  (round to nearest even):
    1. repetition: l / r if l > 0, else l * r (so 0, -0 and -inf are fixed points, r < 1
       boosts, r = 1 is the identity; l / r or l * r may overflow to +-inf, no clamp);
    2. frequency, only where c > 0: l - f * c, rounded once (a fused multiply-add);
    3. presence, only where c > 0: l - q.
  The fp32 result is then rounded to the logits' dtype (round to nearest even). Applying
  steps 2 and 3 only where c > 0 keeps the sign of a -0.0 logit that nothing changes.
- Untouched: rows with r == 1, f == 0 and q == 0, and every id outside prompt ∪ output,
  are bitwise the input. Inside the set, r == 1 with c == 0 also gives back the input.
- Non-finite logits follow IEEE arithmetic through the steps: NaN stays NaN, +-inf stay
  +-inf (l > 0 is false for NaN, so NaN * r = NaN).

Precision: every step is exact in fp64 or made exact. l * r is exact in fp64 (48 bits),
then rounded once to fp32. l / r rounded to fp64 and then to fp32 is the correctly
rounded fp32 quotient (double rounding through >= 2p + 2 bits is innocuous; see
samplecheck.oracles.temperature). For the sums (steps 2 and 3) f * c is exact in fp64 (c < 2**29), and
the fp64 sum s comes with its exact error e (TwoSum); rounding s to fp32 is correct unless
s lies exactly halfway between two fp32 values and e != 0, where the exact sum is on e's
side of the midpoint: `round_sum_to_fp32` rounds that case towards e. So `expected` is the
exact bit pattern a backend following the contract must store, and the record checks it
bitwise (tolerance 0).
"""

from dataclasses import dataclass

import torch

from samplecheck.oracles.ulp import ulp, ulp32

FP32_OVERFLOW = 2.0**128  # where an fp32 rounding of a finite value becomes inf, at the midpoint below


@dataclass(frozen=True)
class PenaltiesReference:
    """expected: the output in the logits' dtype; touched: bool [B, V], ids of prompt ∪ output
    in rows with a penalty on (everything else must be bitwise the input); counts: int64
    [B, V], output occurrences; rtol: the relative tolerance on touched entries (0: bitwise)."""

    expected: torch.Tensor
    touched: torch.Tensor
    counts: torch.Tensor
    rtol: float = 0.0


def token_counts(ids: torch.Tensor, vocab: int) -> torch.Tensor:
    """int64 [B, V]: occurrences of each id in [0, V) per row; -1 and V are dropped."""
    valid = (ids >= 0) & (ids < vocab)
    index = torch.where(valid, ids, vocab).to(torch.int64)
    counts = torch.zeros(ids.size(0), vocab + 1, dtype=torch.int64, device=ids.device)
    return counts.scatter_add_(1, index, torch.ones_like(index))[:, :vocab]


def until_first_pad(ids: torch.Tensor) -> torch.Tensor:
    """ids with each row's first -1 and every entry after it replaced by -1."""
    out = ids.clone()
    for r, row in enumerate(ids.tolist()):
        if -1 in row:
            out[r, row.index(-1):] = -1
    return out


def round_sum_to_fp32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """fp64 tensor holding a + b correctly rounded to fp32 (nearest even), for fp64 `a`, `b`
    whose exact sum is meant (module docstring: TwoSum and the midpoint correction)."""
    s = a + b
    t = s - a
    err = (a - (s - t)) + (b - t)  # s + err == a + b exactly when s is finite
    rounded = s.to(torch.float32)
    near = torch.where(torch.isinf(rounded), torch.copysign(torch.full_like(s, FP32_OVERFLOW), s),
                       rounded.to(torch.float64))
    offset = s - near  # exact: s and near are within one fp32 ulp of each other
    toward = torch.where(offset > 0, float("inf"), float("-inf")).to(torch.float32)
    other = torch.nextafter(rounded, toward)
    midpoint = (offset != 0) & (other.to(torch.float64) - s == offset)
    away = midpoint & torch.isfinite(s) & (err * offset > 0)
    return torch.where(away, other, rounded).to(torch.float64)


def penalties_reference(logits: torch.Tensor, *, prompt_token_ids: torch.Tensor, output_token_ids: torch.Tensor,
                        repetition_penalty: torch.Tensor, frequency_penalty: torch.Tensor,
                        presence_penalty: torch.Tensor, rtol: float = 0.0) -> PenaltiesReference:
    """The reference output for `logits` and the per-row lists and penalties (module docstring)."""
    vocab = logits.size(1)
    counts = token_counts(until_first_pad(output_token_ids), vocab)
    present = (token_counts(prompt_token_ids, vocab) > 0) | (counts > 0)
    r, f, q = (p.detach().to(torch.float64)[:, None] for p in (repetition_penalty, frequency_penalty, presence_penalty))
    active = (r != 1) | (f != 0) | (q != 0)
    touched = present & active
    x = logits.detach().to(torch.float64)
    x = torch.where(x > 0, x / r, x * r).to(torch.float32).to(torch.float64)
    seen = counts > 0
    x = torch.where(seen, round_sum_to_fp32(x, -f * counts), x)
    x = torch.where(seen, round_sum_to_fp32(x, -q.expand_as(x)), x)
    expected = torch.where(touched, x.to(torch.float32).to(logits.dtype), logits.detach())
    return PenaltiesReference(expected=expected, touched=touched, counts=counts, rtol=rtol)


# Declared arithmetic models (samplecheck.registry.semantics). The defaults give
# `penalties_reference` itself.
DIVISIONS = ("ieee", "reciprocal", "approximate")
FREQUENCY_ROUNDINGS = ("one", "two")
STEP_DTYPES = ("fp32", "logits_dtype")


@dataclass(frozen=True)
class ModelPenaltiesReference(PenaltiesReference):
    """A PenaltiesReference whose entries may differ from `expected` by up to `bound` (fp64
    [B, V], absolute; zeros: bitwise)."""

    bound: torch.Tensor | None = None

    @property
    def value_bound(self) -> torch.Tensor | None:
        """The admissible absolute distance of each output entry from `expected` (None: bitwise)."""
        return self.bound


def penalties_model_reference(logits: torch.Tensor, *, prompt_token_ids: torch.Tensor,
                              output_token_ids: torch.Tensor, repetition_penalty: torch.Tensor,
                              frequency_penalty: torch.Tensor, presence_penalty: torch.Tensor,
                              division: str = "ieee", frequency_rounding: str = "one",
                              step_dtype: str = "fp32") -> PenaltiesReference:
    """The output of a declared arithmetic model of the penalties (sets, ids and order as in
    the module docstring). With the defaults: `penalties_reference` (the contract). Else,
    in rows with a penalty on, every entry is computed in IEEE fp32 (torch's own fp32 ops,
    correctly rounded) as the model states, so signed zeros follow IEEE (-0 - fl(f * 0)):
    - division `reciprocal`: repetition l * fl32(1 / r) where l > 0 (the others l * r), over
      prompt ∪ output; `approximate`: the same, with 1 / r within 2 ulp (Triton's `/` on
      NVIDIA GPUs): bound 3 ulp of the product;
    - frequency_rounding `two`: l - fl32(f * c), then l - fl32(q * [c > 0]), on every entry;
    - step_dtype `logits_dtype`: each step's result is rounded to the logits' dtype (the
      steps of an in-place torch op on bf16/fp16 logits), else once at the end.
    The bound of `approximate` carries through the two subtractions (each may then round 1
    ulp differently) and the final rounding: 5 fp32 ulp of the largest intermediate plus 1
    ulp of the result in the logits' dtype."""
    if division not in DIVISIONS or frequency_rounding not in FREQUENCY_ROUNDINGS or step_dtype not in STEP_DTYPES:
        raise ValueError(f"division in {DIVISIONS}, frequency_rounding in {FREQUENCY_ROUNDINGS}, step_dtype in "
                         f"{STEP_DTYPES}; got {division!r}, {frequency_rounding!r}, {step_dtype!r}")
    ids = dict(prompt_token_ids=prompt_token_ids, output_token_ids=output_token_ids,
               repetition_penalty=repetition_penalty, frequency_penalty=frequency_penalty,
               presence_penalty=presence_penalty)
    if (division, frequency_rounding, step_dtype) == ("ieee", "one", "fp32"):
        return penalties_reference(logits, **ids)
    vocab = logits.size(1)
    counts = token_counts(output_token_ids, vocab)
    present = (token_counts(prompt_token_ids, vocab) > 0) | (counts > 0)
    r, f, q = (t.detach().to(torch.float32)[:, None] for t in (repetition_penalty, frequency_penalty, presence_penalty))
    active = ((r != 1) | (f != 0) | (q != 0)).expand_as(present)
    narrow = logits.dtype if step_dtype == "logits_dtype" else torch.float32

    def step(value: torch.Tensor) -> torch.Tensor:
        return value.to(narrow).to(torch.float32)

    x = logits.detach().to(torch.float32)
    scale = torch.where(present, r, torch.ones_like(r))
    if division == "ieee":
        x = step(torch.where(x > 0, x / scale, x * scale))
    else:
        x = step(x * torch.where(x > 0, 1.0 / scale, scale))
    largest = x.abs()  # the largest intermediate of each entry, for the bound of `approximate`
    if frequency_rounding == "two":
        x = step(x - f * counts.to(torch.float32))
        largest = torch.maximum(largest, x.abs())
        x = step(x - q * (counts > 0).to(torch.float32))
    else:
        seen = counts > 0
        x = torch.where(seen, round_sum_to_fp32(x.double(), -f.double() * counts), x.double()).float()
        largest = torch.maximum(largest, x.abs())
        x = step(torch.where(seen, round_sum_to_fp32(x.double(), -q.double().expand_as(x)), x.double()).float())
    expected = torch.where(active, x.to(logits.dtype), logits.detach())
    bound = None
    if division == "approximate":
        bound = torch.where(active & present, 5 * ulp32(torch.maximum(largest, x.abs()).double())
                            + ulp(expected).nan_to_num(0.0), 0.0)
    return ModelPenaltiesReference(expected=expected, touched=active, counts=counts, bound=bound)
