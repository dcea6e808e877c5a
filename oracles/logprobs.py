"""fp64 reference for sampled-token and top-k logprobs (vLLM `num_logprobs`; docs/backends.md, "logprobs").

Semantics (what every logprobs backend is checked against):
- Input: logits [B, V] in fp32/bf16/fp16 (the exact values, upcast to fp64), sampled [B]
  token ids in [0, V), num_logprobs None, -1, 0 or k in [1, V]. The logits are not
  modified ("unchanged" = bitwise equal before and after the call).
- Output: None for num_logprobs None; otherwise (token_ids int64 [B, n + 1], logprobs
  float32 [B, n + 1], ranks int64 [B]) with n = V for -1, else n = num_logprobs.
- token_ids: column 0 is the sampled token. k >= 1: columns 1..k hold k distinct ids in
  non-increasing value order; every id whose value is strictly above the k-th largest value
  (NaN ranked above +inf, as torch.topk on the CPU: `kth_largest`) is among them and the
  rest have values equal to it (tie policy: any ids tied with the k-th value may be chosen,
  in any order among equals; compared as sets, tie-aware).
  -1: columns 1..V are ids 0..V-1 in vocab order. The sampled id may also appear among
  the top-k (the row then repeats it).
- logprobs[b, j] = log_softmax(l_b)[token_ids[b, j]], fp64 here. -inf logits give -inf; an
  all -inf row gives NaN in every column (lse = -inf, -inf - -inf).
- ranks[b] = #{i : l_b[i] >= l_b[sampled_b]}: 1-based, ties counted against the sampled
  token, on the exact values (a -inf sampled token has rank V). Exact.
- NaN or +inf logits: a row holding either gives NaN in every column (as torch.log_softmax:
  lse is NaN, from exp(NaN) or exp(inf - inf)); ranks use IEEE comparisons, so NaN entries
  never count and a NaN sampled token has rank 0.

Precision: ids and ranks are exact. A backend computing log_softmax in fp32 as
m = max, s = sum(exp(l - m)), lse = m + log(s), logprob = l - lse (the Triton kernel, vLLM
MRV2) errs, with u = 2**-24 and p = softmax(l) (first order):
- exp's argument y = l - m is rounded (u|y|), and on GPUs exp is ex2.approx(y * log2 e)
  (another u|y| from the product, about 4u from ex2): relative error per term <= 2u|y| + 4u,
  so <= 2u E_p|y| + 4u on s, and E_p|y| = H(p) - log(s) <= ln V;
- s is summed blocked: at most ceil(V / 1024) sequential additions per lane, then a tree
  over <= 1024 lanes (10 levels): relative error <= (ceil(V / 1024) + 10) u;
- log(s) adds u |log s| <= u ln V (GPU lg2.approx: about 4u absolute more);
- the roundings of m + log(s) and of l - lse add u|lse| and u|logprob|.
Total: |logprob - fp64| <= u (ceil(V / 1024) + 3 ln V + 18 + |lse| + |logprob|). The
record's tolerance `unit` replaces u with a safety factor (2u = 2**-23), the same for every
logits dtype (bf16/fp16 values upcast exactly, the computation is fp32): about 5e-6 at
V = 2048 and 4e-5 at V = 262144 for |lse| and |logprob| of order 10. Measured under the
interpreter (V = 17 ... 262144, randn/peaked/flat/ties rows of scale 0.1 to 10, fp32 and
bf16): at most 0.32 of the bound, where |logprob| ~ 70 and its own rounding dominates.
"""

import math
from dataclasses import dataclass

import torch

SUM_BLOCK = 1024  # lanes of the blocked fp32 sum the bound assumes (see the module docstring)


@dataclass(frozen=True)
class LogprobsReference:
    """The oracle's verdict for one call.

    num_logprobs and sampled: the request; log_probs: fp64 [B, V] log_softmax; lse: fp64 [B];
    ranks: int64 [B]; kth: fp64 [B], the k-th largest value per row (k >= 1; else None);
    unit: the tolerance unit of `error_bound`.
    """

    num_logprobs: int | None
    sampled: torch.Tensor
    log_probs: torch.Tensor
    lse: torch.Tensor
    ranks: torch.Tensor
    kth: torch.Tensor | None
    unit: float


def logprobs_reference(logits: torch.Tensor, sampled: torch.Tensor, num_logprobs: int | None, *,
                       unit: float) -> LogprobsReference:
    """fp64 log_softmax, ranks and the k-th largest value for `logits` and the request."""
    x = logits.detach().to(torch.float64)
    log_probs = torch.log_softmax(x, dim=-1)
    lse = torch.logsumexp(x, dim=-1)
    chosen = x.gather(1, sampled[:, None].to(torch.int64))
    ranks = (x >= chosen).sum(dim=-1)
    kth = None
    if num_logprobs is not None and num_logprobs >= 1:
        kth = kth_largest(x, num_logprobs)
    return LogprobsReference(num_logprobs, sampled, log_probs, lse, ranks, kth, unit)


def kth_largest(x: torch.Tensor, k: int) -> torch.Tensor:
    """The k-th largest value of each row of `x`, NaN ranked above +inf: torch.topk's order on
    the CPU. On CUDA, torch.topk can leave a row's NaN out of its top k (docs/findings.md,
    F17), so rows holding NaN are ranked on the CPU."""
    kth = x.topk(k, dim=-1).values[:, -1]
    nan_rows = torch.isnan(x).any(dim=-1)
    if x.is_cuda and bool(nan_rows.any()):
        kth[nan_rows] = x[nan_rows].cpu().topk(k, dim=-1).values[:, -1].to(x.device)
    return kth


def error_bound(reference: LogprobsReference, expected: torch.Tensor) -> torch.Tensor:
    """Admissible |fp32 logprob - fp64 logprob| per entry of `expected` (fp64 [B, n]): the
    module docstring's bound; non-finite |lse| or |logprob| (masked entries, all -inf rows,
    which must match exactly) count as 0."""
    vocab = reference.log_probs.size(1)
    base = math.ceil(vocab / SUM_BLOCK) + 3 * math.log(max(vocab, 1)) + 18
    lse = reference.lse.abs().nan_to_num(0.0, posinf=0.0)[:, None]
    value = expected.abs().nan_to_num(0.0, posinf=0.0)
    return reference.unit * (base + lse + value)
