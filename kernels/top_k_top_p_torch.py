"""PyTorch sort-based top-k then top-p masking: the fallback backend.

Same contract and keep-all-ties policy as `samplecheck.kernels.top_k_top_p` (see
`samplecheck.oracles.top_k_top_p`): it sorts each row, takes the cut value from the sorted row,
and masks in place everything below the cut. The softmax over the sorted survivors
and its cumulative sum run in fp32 whatever the logits' dtype. NaN sorts as -inf and is
dropped in rows where top-k or top-p is on; +inf survivors make the softmax NaN, so no
prefix holds mass < p and the cut is the maximum (+inf): only the +inf entries stay.
"""

import torch

from samplecheck.kernels.guard import ValueGuard
from samplecheck.kernels.validation import check_top_k_top_p


def apply_top_k_top_p_torch(logits: torch.Tensor, k: torch.Tensor | None = None,
                            p: torch.Tensor | None = None) -> torch.Tensor:
    """Mask `logits` in place and return it."""
    check_top_k_top_p(logits, k, p).check_now()
    batch, vocab = logits.shape
    if batch == 0 or vocab == 0 or (k is None and p is None):
        return logits
    nan = logits.isnan()
    ordered = logits.masked_fill(nan, float("-inf")).sort(dim=-1, descending=True).values
    cut = ordered[:, -1:]
    if k is not None:
        k_on = (k > 0) & (k < vocab)
        kth = ordered.gather(1, (torch.where(k_on, k, vocab).long() - 1)[:, None])
        cut = torch.maximum(cut, kth)
    if p is not None:
        survivors = ordered.masked_fill(ordered < cut, float("-inf"))
        probs = survivors.softmax(dim=-1, dtype=torch.float32)
        mass_before = probs.cumsum(dim=-1) - probs
        # Sorted positions whose preceding mass is < p form a prefix; the cut is its last
        # value, and `>= cut` keeps every value tied with it (mass measured by value).
        last = ((mass_before < p[:, None]).sum(dim=-1, keepdim=True) - 1).clamp(min=0)
        cut_p = torch.where(p[:, None] < 1, ordered.gather(1, last), ordered[:, -1:])
        cut = torch.maximum(cut, cut_p)
    logits.masked_fill_(logits < cut, float("-inf"))
    on = torch.zeros_like(nan[:, 0]) if k is None else (k > 0) & (k < vocab)
    if p is not None:
        on |= p < 1
    logits.masked_fill_(nan & on[:, None], float("-inf"))
    return logits
