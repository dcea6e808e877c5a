"""An implementation of samplecheck's top_k_top_p contract written outside its tree.

It sorts each row once, derives the top-k and top-p cut values from the sorted row, and
masks everything below the larger cut, in place; NaN reads as -inf, so a row where a filter
is on drops it (docs/backends.md, "Edge values"). Verify it with:

    samplecheck test --backend top_k_top_p=external_topk:top_k_top_p_mask --backend-only

(with this folder on PYTHONPATH), or install the package and drop the --backend flag.
"""

import torch


def top_k_top_p_mask(logits: torch.Tensor, k: torch.Tensor | None = None,
                     p: torch.Tensor | None = None) -> torch.Tensor:
    if not isinstance(logits, torch.Tensor):
        raise TypeError("logits must be a torch.Tensor")
    if logits.device.type not in ("cpu", "cuda"):
        raise ValueError("logits must be on a CPU or CUDA device")
    if logits.dim() != 2:
        raise ValueError("logits must be 2-D")
    if logits.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise TypeError("unsupported logits dtype")
    if logits.size(1) > 1 and logits.stride(1) != 1:
        raise ValueError("logits columns must be contiguous")
    for name, value, dtypes in (("k", k, (torch.int32, torch.int64)), ("p", p, (torch.float32,))):
        if value is not None and value.dtype not in dtypes:
            raise TypeError(f"bad {name} dtype")
        if value is not None and value.shape != (logits.size(0),):
            raise ValueError(f"bad {name} shape")
        if value is not None and value.device != logits.device:
            raise ValueError(f"{name} must be on the logits' device")
    if k is not None and bool((k < -1).any()):
        raise ValueError("k must be >= -1")
    if p is not None and not bool(((p > 0) & (p <= 1)).all()):
        raise ValueError("p must be in (0, 1]")
    rows, vocab = logits.shape
    if rows == 0 or vocab == 0:
        return logits
    nan = logits.isnan()
    values = logits.float().masked_fill(nan, float("-inf"))  # NaN reads as -inf: never counted, no mass
    ordered = values.sort(dim=-1, descending=True).values
    cut = ordered[:, -1]
    on = torch.zeros(rows, dtype=torch.bool, device=logits.device)  # rows where a filter is on
    if k is not None:
        k_on = (k > 0) & (k < vocab)
        k_eff = torch.where(k_on, k, vocab).long()
        cut = torch.maximum(cut, ordered.gather(1, (k_eff - 1)[:, None]).squeeze(1))
        on |= k_on
    if p is not None:
        # A row whose maximum is +inf (or that is all -inf) has NaN probabilities, so it keeps
        # its first entry's value: exactly its +inf entries (or everything, all -inf).
        probs = torch.softmax(ordered.masked_fill(ordered < cut[:, None], float("-inf")), dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs
        n_keep = (before < p[:, None]).sum(dim=-1).clamp(min=1)
        cut_p = ordered.gather(1, (n_keep - 1)[:, None]).squeeze(1)
        cut = torch.where(p < 1, torch.maximum(cut, cut_p), cut)
        on |= p < 1
    logits.masked_fill_((values < cut[:, None]) | (nan & on[:, None]), float("-inf"))
    return logits


# What this implementation supports, for samplecheck (docs/backends.md): its memory, since
# it sorts: an fp32 upcast (4 bytes per logit), the sort's values and int64 indices (12), the
# top-p softmax and cumsum (8), the boolean mask (1), and the sort's workspace, which torch
# does not document (measured on an H200: 36.5 bytes per logit in all at [1, 32000], 48.2
# at [7, 32000]): 64 bytes per logit.
top_k_top_p_mask.samplecheck = {"extra_memory": lambda logits, args: 64 * logits.numel()}
