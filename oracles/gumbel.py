"""Reference for Gumbel-max sampling keyed by (request seed, position, token id) (vLLM MRV2 style).

Semantics (what every gumbel_sample backend is checked against):
- Input: logits [B, V] fp32/bf16/fp16 (exact values), per row an int64 seed (any value),
  an int64 position >= 0 and a float32 temperature T >= 0 (None: 1). Output: one id per
  row, always in [0, V). The logits are not modified.
- Greedy rows (T == 0): the lowest id among the row's maxima, no noise.
- Sampled rows (T > 0): s = fl32(l / T) (the fp32 quotient, correctly rounded; T == 1
  gives s = l), score = s + g, id = the lowest argmax of score, with g = -log(-log(u)).
- Noise: u is a function of (seed, position, token id) alone. A row key is murmur3_32
  (seed `HASH_SEED`) of the four little-endian 32-bit words (seed mod 2**32, seed >> 32 mod
  2**32, position mod 2**32, position >> 32); per token, h = fmix32(key ^ (id * 0x9E3779B9
  mod 2**32)) (murmur3's finaliser: a bijection with full avalanche, so the ids of a row get
  distinct h) and u = (2 * (h >> 9) + 1) / 2**24. This oracle reproduces h with int64
  arithmetic (products split so nothing overflows), so u is bit-exact; g is in fp64.
- Resolution: u takes 2**23 values in [2**-24, 1 - 2**-24], so g lies in
  [G_MIN, G_MAX] = [-2.812, 16.636]. A token with s < max(s) - (G_MAX - G_MIN) (19.45 nats)
  can never be drawn: its exact probability is below e**-19.45 = 3.6e-9 times the top
  token's, so the truncated mass is at most (V - 1) * 3.6e-9 (<= 9.4e-4 at V = 262144 in the
  worst case of every other token just below the cut; far less for real logits). Noise
  events rarer than 2**-23 per token are likewise not represented.
- fp32 score resolution: s + g is rounded to the ulp of |s|, so large |s| (tiny T) coarsens
  the noise (|s| ~ 1e5: steps of 2**-7 nats) and from |s| ~ 2**28 absorbs it: tokens tied
  in s then always give the lowest id and the row is effectively greedy. The band below
  admits that; the sampling law is only claimed in rows whose largest finite s is below
  LAW_MAX_SCORE = 2**18 in magnitude (steps of at most 2**-6 nats where the winner is
  decided; T >= 2**-10 in the Gumbel sampling tests stays below it).
- Non-finite entries: -inf and NaN never win (NaN is treated as -inf, also in greedy rows,
  unlike torch.argmax); +inf entries (or s overflowing to +inf) win, lowest id first; a
  row with nothing above -inf returns 0.
- Statistically the id is distributed as softmax(s) over the finite entries (up to the
  truncation above); greedy rows are deterministic.

Precision: the backend computes g and s + g in fp32. Assuming its log is within 4 ulp
(numpy in the interpreter, libdevice logf on NVIDIA: 1 ulp), -log(u) is within 2**-21
relative, g within 2**-21 * (1 + |g|) and the sum adds 2**-24 * |s + g|: a score is within
2**-20 * (1 + |g| + |s|) of the fp64 one. The oracle admits every id whose fp64 score is
within band * (1 + |g| + |s|) of the best one's lower bound (band = 2**-19: twice that
bound); greedy rows, +inf rows and empty rows admit exactly one id.
"""

from dataclasses import dataclass

import torch

HASH_SEED = 0x5EED5A3D
MASK32 = 0xFFFFFFFF
U_MIN = 2.0**-24
G_MIN = -float(torch.log(-torch.log(torch.tensor(U_MIN, dtype=torch.float64))))
G_MAX = -float(torch.log(-torch.log1p(torch.tensor(-U_MIN, dtype=torch.float64))))
LAW_MAX_SCORE = 2.0**18


def _mul32(a: torch.Tensor, b: int) -> torch.Tensor:
    """(a * b) mod 2**32 for int64 a in [0, 2**32) and a 32-bit constant b, without overflow."""
    low = a * (b & 0xFFFF)
    high = ((a * (b >> 16)) & 0xFFFF) << 16
    return (low + high) & MASK32


def _rotl(x: torch.Tensor, r: int) -> torch.Tensor:
    return ((x << r) & MASK32) | (x >> (32 - r))


def _fmix32(h: torch.Tensor) -> torch.Tensor:
    h = _mul32(h ^ (h >> 16), 0x85EBCA6B)
    h = _mul32(h ^ (h >> 13), 0xC2B2AE35)
    return h ^ (h >> 16)


def row_keys(seeds: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """murmur3_32 (seed HASH_SEED) of the little-endian words (seed lo, seed hi, position lo,
    position hi), int64 in [0, 2**32) per row."""
    seeds, positions = seeds.to(torch.int64), positions.to(torch.int64)
    h = torch.full_like(seeds, HASH_SEED)
    for word in (seeds & MASK32, (seeds >> 32) & MASK32, positions & MASK32, (positions >> 32) & MASK32):
        k = _mul32(_rotl(_mul32(word, 0xCC9E2D51), 15), 0x1B873593)
        h = (_mul32(_rotl(h ^ k, 13), 5) + 0xE6546B64) & MASK32
    return _fmix32(h ^ 16)


def uniforms(seeds: torch.Tensor, positions: torch.Tensor, vocab: int) -> torch.Tensor:
    """u [B, vocab] in fp64 (exact): h = fmix32(key ^ (id * 0x9E3779B9 mod 2**32)),
    u = (2 * (h >> 9) + 1) / 2**24."""
    ids = torch.arange(vocab, dtype=torch.int64, device=seeds.device)
    h = _fmix32(row_keys(seeds, positions)[:, None] ^ _mul32(ids, 0x9E3779B9)[None, :])
    return ((h >> 9) * 2 + 1).to(torch.float64) * U_MIN


def gumbel_noise(seeds: torch.Tensor, positions: torch.Tensor, vocab: int) -> torch.Tensor:
    """g [B, vocab] = -log(-log(u)) in fp64."""
    return -torch.log(-torch.log(uniforms(seeds, positions, vocab)))


@dataclass(frozen=True)
class GumbelReference:
    """admissible: bool [B, V], the ids a backend may return (exactly one in greedy, +inf and
    empty rows); scaled: fp64 [B, V], fl32(l / T) with NaN as -inf (the logits in greedy
    rows); noise: fp64 [B, V]; score: fp64 [B, V], scaled + noise (scaled in greedy rows);
    greedy: bool [B]; single: bool [B], the rows with exactly one admissible id (greedy rows,
    rows with a +inf score, rows with nothing above -inf)."""

    admissible: torch.Tensor
    scaled: torch.Tensor
    noise: torch.Tensor
    score: torch.Tensor
    greedy: torch.Tensor
    single: torch.Tensor


def scaled_logits(logits: torch.Tensor, temperature: torch.Tensor | None) -> torch.Tensor:
    """fl32(l / T) as fp64 (l itself where T is 0 or 1, or None), NaN replaced by -inf."""
    x = logits.detach().to(torch.float32)
    if temperature is not None:
        t = temperature.detach().to(torch.float32)
        x = x / torch.where(t == 0, 1.0, t)[:, None]  # IEEE fp32 division, as div_rn
    x = x.to(torch.float64)
    return x.masked_fill(x.isnan(), float("-inf"))


def lowest_one_hot(mask: torch.Tensor) -> torch.Tensor:
    """One-hot of the lowest True id per row (id 0 for a row with none)."""
    first = torch.where(mask.any(dim=-1), mask.to(torch.int8).argmax(dim=-1), 0)
    return torch.nn.functional.one_hot(first, mask.size(-1)).bool()


def gumbel_reference(logits: torch.Tensor, seeds: torch.Tensor, positions: torch.Tensor,
                     temperature: torch.Tensor | None, *, band: float) -> GumbelReference:
    """The admissible ids for each row (module docstring)."""
    batch, vocab = logits.shape
    scaled = scaled_logits(logits, temperature)
    greedy = (temperature == 0) if temperature is not None else torch.zeros(batch, dtype=torch.bool)
    greedy = greedy.to(logits.device)
    noise = gumbel_noise(seeds, positions, vocab)
    score = torch.where(greedy[:, None], scaled, scaled + noise)
    finite = torch.isfinite(score)
    slack = torch.where(finite & ~greedy[:, None], band * (1 + noise.abs() + scaled.abs()), 0.0)
    floor = torch.where(finite, score - slack, float("-inf")).amax(dim=-1, keepdim=True)
    near = finite & (score + slack >= floor)
    exact = lowest_one_hot(score == score.amax(dim=-1, keepdim=True))
    single = greedy | (score == float("inf")).any(dim=-1) | ~finite.any(dim=-1)
    admissible = torch.where(single[:, None], exact, near)
    return GumbelReference(admissible=admissible, scaled=scaled, noise=noise, score=score, greedy=greedy,
                           single=single)


def gumbel_law(reference: GumbelReference) -> torch.Tensor:
    """The sampling law [B, V] fp64: softmax of the fp32-scaled logits over the finite
    entries in sampled rows; one-hot at the one admissible id in greedy rows, rows with a +inf
    score and rows with no finite entry; NaN (no law claimed) in sampled rows where the noise
    does not resolve (`noise_resolves`)."""
    probs = torch.softmax(reference.scaled, dim=-1)
    probs = probs.masked_fill(~noise_resolves(reference.scaled)[:, None], float("nan"))
    return torch.where(reference.single[:, None], reference.admissible.to(torch.float64), probs)


def noise_resolves(scores: torch.Tensor) -> torch.Tensor:
    """bool [B]: rows whose largest finite score is below LAW_MAX_SCORE in magnitude, where the
    sampling law is claimed (module docstring: fp32 score resolution)."""
    top = scores.masked_fill(~torch.isfinite(scores), float("-inf")).amax(dim=-1)
    return top.abs() < LAW_MAX_SCORE


def own_stream_reference(reference: GumbelReference) -> GumbelReference:
    """`reference` for a backend with its own random stream (declared `random_stream: own`):
    the ids its noise draws cannot be predicted, so a sampled row admits every entry with a
    finite score; the rows with one admissible id (greedy rows: the lowest maximum; a +inf
    score: the lowest +inf; nothing above -inf: id 0) keep it. The law (`gumbel_law`) is
    unchanged: the sampling tests judge the stream."""
    finite = torch.isfinite(reference.score)
    admissible = torch.where(reference.single[:, None], reference.admissible, finite)
    return GumbelReference(admissible=admissible, scaled=reference.scaled, noise=reference.noise,
                           score=reference.score, greedy=reference.greedy, single=reference.single)
