"""Reference for allowed_token_ids, logit_bias and min_tokens (docs/backends.md, "logit_bias").

Semantics (what every logit_bias backend is checked against, bitwise):
- Input: logits [B, V] fp32/bf16/fp16. Token-id lists [B, L] are padded with -1; a -1 entry
  is no id, wherever it stands. Every other id is in [0, V) (backends reject the rest).
- Per row, in this order (as vLLM MRV2's `_bias_kernel`):
  1. allowed_token_ids: if the row holds at least one id, every token not in it becomes
     -inf; the allowed entries keep their exact bits (-inf, -0.0 and NaN included). A row
     without ids is unrestricted. Repeated allowed ids mean the same as one.
  2. logit_bias: for each (id, b) of the row, l[id] = (fp32(l[id]) + b) rounded to nearest
     even in the logits' dtype. The contract fixes the fp32 add, so there is no fp64 step and
     no tolerance: IEEE addition, so -inf + b = -inf, overflow gives +-inf and
     -0.0 + 0.0 = +0.0. Ids are unique within a row (vLLM's dict); b is finite.
  3. min_tokens: if output_len < min_tokens (tokens generated so far, strictly fewer than
     the minimum), every stop id of the row becomes -inf; otherwise nothing changes. So the
     token at 0-based output index i may be a stop token iff i >= min_tokens.
  Every other entry is bitwise unchanged. With finite biases the three steps commute,
  except that a restriction must not restore pre-bias or pre-mask values.
- Absent parts (None) are skipped.
"""

import torch

PAD_ID = -1


def _entries(ids: torch.Tensor, rows: torch.Tensor | None = None):
    """(row, id) index tensors of the given (non -1) ids, restricted to `rows` [B] bool."""
    given = ids != PAD_ID
    if rows is not None:
        given &= rows[:, None]
    row_index = torch.arange(ids.size(0), device=ids.device)[:, None].expand_as(ids)
    return row_index[given], ids[given].long()


def logit_bias_reference(logits: torch.Tensor, *, allowed_token_ids=None, logit_bias_ids=None,
                         logit_bias_values=None, stop_token_ids=None, min_tokens=None,
                         output_len=None) -> torch.Tensor:
    """The expected output (a new tensor in the logits' dtype; `logits` is not modified)."""
    out = logits.detach().clone()
    if allowed_token_ids is not None:
        allowed = torch.zeros(out.shape, dtype=torch.bool, device=out.device)
        allowed[_entries(allowed_token_ids)] = True
        restricted = (allowed_token_ids != PAD_ID).any(dim=1)
        out.masked_fill_(restricted[:, None] & ~allowed, float("-inf"))
    if logit_bias_ids is not None:
        where = _entries(logit_bias_ids)
        bias = logit_bias_values[logit_bias_ids != PAD_ID]
        out[where] = (out[where].to(torch.float32) + bias).to(out.dtype)
    if stop_token_ids is not None:
        active = output_len.long() < min_tokens.long()
        out[_entries(stop_token_ids, active)] = float("-inf")
    return out
