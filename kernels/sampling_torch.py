"""PyTorch sampling paths, as backends of the sampling records: torch.multinomial over the
softmax of a masking backend's output, and a plain fp32 softmax with temperature.

Contracts (records `top_k_top_p_sample`, `min_p_sample`, `softmax`):
- `logits` [B, V] fp32/bf16/fp16, any row stride, column stride 1; never modified (the
  masking runs on a clone).
- Sampling: `fn(logits, *, k=None, p=None, seed)` / `fn(logits, *, min_p=None, seed)` ->
  int64 ids [B]. Row b is drawn from softmax(masked row b) computed in fp32, with
  `torch.multinomial` and a `torch.Generator` seeded with `seed` on the logits' device.
  The draw consumes the same random numbers whatever the values (one per row on CPU, one
  exponential per entry on CUDA), so a row's id depends only on its own logits, the seed
  and its row index (not batch-invariant: the stream follows the row index).
- Sampling needs V >= 1 (ValueError on an empty vocabulary).
- A row with no valid distribution (NaN, +inf, or no finite entry: only poisoned rows)
  returns id 0, as FlashInfer does, instead of raising.
- Softmax: `softmax_torch(logits, temperature=None)` -> fp32 [B, V] probabilities of
  l / T per row, computed in fp32 (IEEE division, max-subtracted softmax); T must be
  finite and > 0 (None: T = 1).
"""

import torch

from samplecheck.kernels.min_p import apply_min_p_torch
from samplecheck.kernels.top_k_top_p_torch import apply_top_k_top_p_torch
from samplecheck.kernels.validation import (check_min_p, check_sampled_vocab, check_seed, check_softmax_temperature,
                                            check_top_k_top_p)


def multinomial_rows(logits: torch.Tensor, seed: int) -> torch.Tensor:
    """One id per row from softmax(logits) in fp32 (int64 [B]); invalid rows give id 0."""
    probs = torch.softmax(logits.to(torch.float32), dim=-1)
    bad = ~torch.isfinite(probs).all(dim=-1) | ~(probs.sum(dim=-1) > 0)
    if bool(bad.any()):
        probs = probs.masked_fill(bad[:, None], 0.0)
        probs[:, 0] = torch.where(bad, 1.0, probs[:, 0])
    gen = torch.Generator(device=logits.device).manual_seed(seed)
    return torch.multinomial(probs, 1, replacement=True, generator=gen).flatten()


def top_k_top_p_sample_torch(logits: torch.Tensor, *, k: torch.Tensor | None = None,
                             p: torch.Tensor | None = None, seed: int) -> torch.Tensor:
    """samplecheck.kernels.top_k_top_p_torch (sort-based, keep_all_ties, top-p on the renormalised
    survivors, fp32 mass) on a clone, then torch.multinomial over its fp32 softmax."""
    check_top_k_top_p(logits, k, p).check_now()  # before the clone, which would hide the caller's layout
    check_sampled_vocab(logits)
    check_seed("seed", seed)
    if logits.size(0) == 0:
        return torch.empty(0, dtype=torch.int64, device=logits.device)
    masked = apply_top_k_top_p_torch(logits.clone(), k, p)
    return multinomial_rows(masked, seed)


def min_p_sample_torch(logits: torch.Tensor, *, min_p: torch.Tensor | None = None, seed: int) -> torch.Tensor:
    """samplecheck.kernels.min_p's PyTorch fallback (log space, fp32 threshold) on a clone, then
    torch.multinomial over its fp32 softmax."""
    check_min_p(logits, min_p).check_now()  # before the clone, which would hide the caller's layout
    check_sampled_vocab(logits)
    check_seed("seed", seed)
    if logits.size(0) == 0:
        return torch.empty(0, dtype=torch.int64, device=logits.device)
    masked = apply_min_p_torch(logits.clone(), min_p)
    return multinomial_rows(masked, seed)


def softmax_torch(logits: torch.Tensor, temperature: torch.Tensor | None = None) -> torch.Tensor:
    """fp32 softmax(l / T) per row: upcast, IEEE fp32 division, torch.softmax (max-subtracted)."""
    check_softmax_temperature(logits, temperature)
    x = logits.to(torch.float32)
    if temperature is not None:
        x = x / temperature[:, None]
    return torch.softmax(x, dim=-1)
