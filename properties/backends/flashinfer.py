"""FlashInfer 0.7.4's sampling APIs, each adapted to one of our records' contracts (the targets
of the FlashInfer pack, samplecheck.backends.flashinfer_pack).

One adapter per API. Each imports `flashinfer` inside the function (lazily), translates
our record's contract to the API's arguments, and calls the API on the tensor as given:
no adapter makes its input contiguous, so a layout the API mishandles shows up as a
failure of the strided properties (declared as strict xfails, with the finding). The
registry side is the FlashInfer pack (samplecheck.backends.flashinfer_pack), which declares
every adapter CUDA-only, with the cases it implements, and is not plugged where flashinfer
is not installed or there is no CUDA device.

Declared semantics common to every adapter (FlashInfer source, docs/backends.md):
- Argument translation: our k is per row with k <= 0 or k >= V meaning "top-k off"; it is
  always passed as an int32 tensor with the off rows set to V (FlashInfer's no-op value;
  a Python int would route top_k_first calls to the radix `topk` module, which is not
  prebuilt and compiles for > 10 minutes). Our p (None: off) is passed as a float32 tensor
  (None -> 1.0 per row). min_p None -> 0.0 per row.
- Validation: our argument checks (samplecheck.kernels.validation) run first, so bad input raises our
  errors; FlashInfer itself does not validate k, p or min_p ranges.
- fp32 compute: every API upcasts with `.float()` (sampling, renorm of top-p, softmax),
  or computes in fp32 internally (top_k_mask_logits, top_k_renorm_probs keep the dtype).
- Contiguity: the C++ side requires a contiguous 2-D CUDA tensor and addresses rows as
  row * V (flashinfer#1866). Inputs that are upcast by `.float()` (bf16/fp16 to the
  sampling, softmax and top-p renorm APIs) are copied and work; an fp32 or same-dtype
  strided view raises. Vector loads are gcd(16 / itemsize, V) wide and their alignment is
  not checked: a contiguous view at a storage offset that is not a multiple of the vector
  width makes a misaligned launch, a sticky CUDA error that ends the process. The adapters
  refuse that launch with a ValueError (`_refuse_misaligned`) so one bad layout cannot take
  the rest of a run with it; the refusal is declared as an xfail.
- Seed and offset: sampling adapters pass `seed=seed, offset=0` explicitly (no generator
  is read or advanced). cuRAND Philox4_32_10 with subsequence = output row (row * V + col
  for sampling_from_logits): ids depend on (seed, row index), so the same seed gives the
  same ids, but a row moved to another batch slot gets another stream (not
  batch-invariant). `deterministic=True` throughout.
- Probability-space APIs (everything named *_probs) see softmax(logits) in fp32. An entry
  whose fp32 probability underflows to 0 (more than ~87 below the row max) is
  indistinguishable from a masked one; the pack restricts these adapters to logits spans
  without underflow (`no_underflow`).
"""

import math

import torch

from samplecheck.kernels.validation import check_min_p, check_seed, check_softmax_temperature, check_top_k_top_p


# --- helpers ------------------------------------------------------------------------------

def _sampling():
    import flashinfer.sampling

    return flashinfer.sampling


def _k_tensor(k: torch.Tensor | None, logits: torch.Tensor) -> torch.Tensor:
    batch, vocab = logits.shape
    if k is None:
        return torch.full((batch,), vocab, dtype=torch.int32, device=logits.device)
    on = (k > 0) & (k < vocab)
    return torch.where(on, k, vocab).to(torch.int32)


def _p_tensor(p: torch.Tensor | None, logits: torch.Tensor) -> torch.Tensor:
    if p is None:
        return torch.ones(logits.size(0), dtype=torch.float32, device=logits.device)
    return p


def _refuse_misaligned(t: torch.Tensor, api: str) -> None:
    """Raise instead of launching FlashInfer's vector loads on a misaligned contiguous view
    (a misaligned address is a sticky CUDA error: every later CUDA call in the process fails)."""
    if not t.is_contiguous() or t.numel() == 0:
        return
    width = math.gcd(16 // t.element_size(), t.size(-1)) * t.element_size()
    if width > t.element_size() and t.data_ptr() % width:
        raise ValueError(f"{api}: FlashInfer would load {width}-byte vectors from an address that is not "
                         f"{width}-byte aligned (storage offset {t.storage_offset()}); refused (a misaligned "
                         f"launch is a sticky CUDA error)")


def _reaches_kernel_as_is(logits: torch.Tensor) -> bool:
    """APIs that call `.float()` first pass fp32 input through unchanged (others are copied)."""
    return logits.dtype == torch.float32


def _ids(ids: torch.Tensor) -> torch.Tensor:
    return ids.to(torch.int64)


def _probs(logits: torch.Tensor) -> torch.Tensor:
    """fp32 softmax of the logits (a fresh contiguous tensor): the input of *_probs APIs.
    It is taken of an aligned copy: torch.softmax's rounding depends on the input's
    alignment, and a *_probs API must see the same probabilities for every layout."""
    return torch.softmax(logits.to(torch.float32, copy=True), dim=-1)


def _mask_where_zero(logits: torch.Tensor, renormed: torch.Tensor) -> torch.Tensor:
    logits.masked_fill_(renormed == 0, float("-inf"))
    return logits


def _require_off(name: str, value: torch.Tensor | None, off, api: str) -> None:
    if value is not None and not bool(off(value).all()):
        raise ValueError(f"{api} does not implement {name}; the backend's `accepts` keeps such cases out")


def _k_off(logits):
    return lambda k: (k <= 0) | (k >= logits.size(1))


def _p_off(p):
    return p >= 1


# --- masking adapters (record top_k_top_p: in place, returns logits) -----------------------

def top_k_mask_logits(logits: torch.Tensor, k: torch.Tensor | None = None, p: torch.Tensor | None = None):
    """flashinfer.sampling.top_k_mask_logits(logits, k) copied back into `logits` (in place).

    - Tie policy: radix select of the k-th value; FlashInfer's own tests admit any subset of
      the boundary ties (between k - 1 and #above + #ties + 1 kept), ours expects all ties.
    - Compute: in the logits' dtype (fp32/bf16/fp16 kernels, radix on the bit patterns);
      output dtype = input dtype, masked entries -inf, kept ones copied.
    - Contiguity: required for every dtype (no `.float()` copy); strided views raise,
      misaligned offsets are refused (module docstring).
    - Seed: none (deterministic). Top-k only: p must be off.
    """
    check_top_k_top_p(logits, k, p).check_now()
    _require_off("top-p", p, _p_off, "top_k_mask_logits")
    if logits.numel() == 0:
        return logits
    _refuse_misaligned(logits, "top_k_mask_logits")
    out = _sampling().top_k_mask_logits(logits, _k_tensor(k, logits))
    logits.copy_(out)
    return logits


def top_k_renorm_probs(logits: torch.Tensor, k: torch.Tensor | None = None, p: torch.Tensor | None = None):
    """probs = softmax(logits) in fp32, flashinfer.sampling.top_k_renorm_probs(probs, k,
    is_deterministic=True), then `logits` masked (in place, -inf) where the renormalised
    probability is 0; kept entries stay bitwise unchanged.

    - Tie policy: radix select on fp32 probabilities, boundary ties kept. Distinct logits
      whose fp32 probabilities round equal are ties (declared: top_k_values=fp32_probabilities).
    - Compute: fp32 (our softmax, FlashInfer's renorm on fp32 input).
    - Contiguity: the API sees our fresh fp32 softmax, so every layout reaches it contiguous.
    - Seed: none. Top-k only. Probability space: entries whose fp32 probability underflows
      are masked whatever k says (cases restricted by `no_underflow`).
    """
    check_top_k_top_p(logits, k, p).check_now()
    _require_off("top-p", p, _p_off, "top_k_renorm_probs")
    if logits.numel() == 0:
        return logits
    renormed = _sampling().top_k_renorm_probs(_probs(logits), _k_tensor(k, logits), is_deterministic=True)
    return _mask_where_zero(logits, renormed)


def top_p_renorm_probs(logits: torch.Tensor, k: torch.Tensor | None = None, p: torch.Tensor | None = None):
    """probs = softmax(logits) in fp32, flashinfer.sampling.top_p_renorm_probs(probs, p,
    is_deterministic=True) (radix "AIR" top-p, 2048 buckets), then `logits` masked (in
    place, -inf) where the renormalised probability is 0.

    - Tie policy: threshold on probability values, so boundary ties go together (mass by value).
    - p = 1 rows are passed as 1.0 (FlashInfer documents top_p in (0, 1)); at V >= 2048 that
      drops the smallest probabilities (finding F6).
    - Compute: fp32. Contiguity: sees our fresh fp32 softmax. Seed: none. Top-p only.
      Probability space (cases restricted by `no_underflow`).
    """
    check_top_k_top_p(logits, k, p).check_now()
    _require_off("top-k", k, _k_off(logits), "top_p_renorm_probs")
    if logits.numel() == 0:
        return logits
    renormed = _sampling().top_p_renorm_probs(_probs(logits), _p_tensor(p, logits), is_deterministic=True)
    return _mask_where_zero(logits, renormed)


# --- sampling adapters (record top_k_top_p_sample: ids int64 [B], input unchanged) ---------

def _empty_ids(logits):
    return torch.empty(0, dtype=torch.int64, device=logits.device)


def _seed(seed: int) -> int:
    """The caller's seed (checked first by every sampling adapter, as ours are: an int in
    [-2**63, 2**64 - 1]) as FlashInfer's unsigned 64-bit seed."""
    return seed & (2**64 - 1)


def _from_logits(order: str, logits, k, p, seed, **bound):
    check_seed("seed", seed)  # first: the adapters of one filter refuse the other one
    check_top_k_top_p(logits, k, p).check_now()
    if logits.size(0) == 0:
        return _empty_ids(logits)
    if order == "top_k_first":
        # top_k_mask_logits sees the view as given, in its own dtype.
        _refuse_misaligned(logits, "top_k_top_p_sampling_from_logits")
    ids = _sampling().top_k_top_p_sampling_from_logits(
        logits, _k_tensor(k, logits), _p_tensor(p, logits), filter_apply_order=order,
        deterministic=True, seed=_seed(seed), offset=0, **bound)
    return _ids(ids)


# FlashInfer 0.7.4's top_k_first fast path: a top_k bound <= 256 at V >= 65536.
FAST_PATH_MAX_K = 256


def top_k_top_p_sampling_from_logits_top_k_first_bounded(logits, *, k=None, p=None, seed: int):
    """The top_k_first call with `top_k_max` = the batch's largest k when every row's k is in
    [1, 256] (else the plain call): FlashInfer's fast path at V >= 65536.

    Path (fast): radix top-k of top_k_max entries per row (the `topk` module) -> each row
    masked past its own k -> fp32 softmax over the survivors -> top_p_sampling_from_probs on
    the [B, top_k_max] survivors, ids mapped back. Below V = 65536: the plain call.
    - Tie policy (fast): exactly k at the k-th value, which of the tied ids unspecified
      (finding F11); the plain call keeps every tie.
    - Compute: fp32 softmax of the survivors (no F4 on the fast path).
    - Seed/offset: explicit seed, offset 0; Philox over the survivors' columns: another random
      stream than the plain call's (F11).
    """
    bound = {}
    if k is not None and k.numel() and bool(((k >= 1) & (k <= FAST_PATH_MAX_K)).all()):
        bound = {"top_k_max": int(k.max())}
    return _from_logits("top_k_first", logits, k, p, seed, **bound)


def top_k_top_p_sampling_from_logits_top_k_first(logits, *, k=None, p=None, seed: int):
    """flashinfer.sampling.top_k_top_p_sampling_from_logits(filter_apply_order="top_k_first").

    Path (per-row k tensor, so never the radix fast path): top_k_mask_logits(logits, k) ->
    torch.softmax in the logits' dtype (bf16 logits give bf16 probabilities) ->
    top_p_sampling_from_probs (`.float()`, rejection sampling with pivots).
    - Tie policy: top-k from the radix mask (any subset of boundary ties); top-p by value
      (mass strictly above < p: all ties kept). Top-p on the renormalised survivors.
    - Contiguity: the mask sees the view as given: every strided layout raises.
    - Seed/offset: explicit seed, offset 0, Philox subsequence = row.
    """
    return _from_logits("top_k_first", logits, k, p, seed)


def top_k_top_p_sampling_from_logits_joint(logits, *, k=None, p=None, seed: int):
    """flashinfer.sampling.top_k_top_p_sampling_from_logits(filter_apply_order="joint"):
    torch.softmax(logits) in the logits' dtype, then one rejection-sampling kernel (fp32)
    applying both filters on the ORIGINAL full-vocab mass (ours: renormalised after top-k;
    the backend's `accepts` keeps rows with both filters active out).
    - Tie policy: top-k accepts x iff #{p_j > p_x} < k (all ties over-accepted); top-p by value.
    - Contiguity: the softmax makes a contiguous copy. Seed/offset: explicit, subsequence = row.
    """
    return _from_logits("joint", logits, k, p, seed)


def _from_probs(order: str, logits, k, p, seed):
    check_seed("seed", seed)  # first: the adapters of one filter refuse the other one
    check_top_k_top_p(logits, k, p).check_now()
    if logits.size(0) == 0:
        return _empty_ids(logits)
    ids = _sampling().top_k_top_p_sampling_from_probs(
        _probs(logits), _k_tensor(k, logits), _p_tensor(p, logits), filter_apply_order=order,
        deterministic=True, seed=_seed(seed), offset=0)
    return _ids(ids)


def top_k_top_p_sampling_from_probs_top_k_first(logits, *, k=None, p=None, seed: int):
    """flashinfer.sampling.top_k_top_p_sampling_from_probs(softmax(logits) fp32,
    filter_apply_order="top_k_first"): top_k_renorm_probs (radix, any subset of boundary
    ties), then top_p_sampling_from_probs on the renormalised survivors (top-p by value).
    fp32 throughout; the API sees our fresh contiguous probs; explicit seed, offset 0."""
    return _from_probs("top_k_first", logits, k, p, seed)


def top_k_top_p_sampling_from_probs_joint(logits, *, k=None, p=None, seed: int):
    """flashinfer.sampling.top_k_top_p_sampling_from_probs(softmax(logits) fp32,
    filter_apply_order="joint"): one rejection-sampling kernel, top-p on the original
    full-vocab mass (rows with both filters active are kept out by `accepts`), top-k over-
    accepts ties, top-p by value. fp32; contiguous probs; explicit seed, offset 0."""
    return _from_probs("joint", logits, k, p, seed)


def top_p_sampling_from_probs(logits, *, k=None, p=None, seed: int):
    """flashinfer.sampling.top_p_sampling_from_probs(softmax(logits) fp32, p): rejection
    sampling with pivots, x accepted iff the mass strictly above it (by value) is < p, so
    boundary ties are all kept. fp32; contiguous probs; explicit seed, offset 0. Top-p only."""
    check_seed("seed", seed)  # first: the adapters of one filter refuse the other one
    check_top_k_top_p(logits, k, p).check_now()
    _require_off("top-k", k, _k_off(logits), "top_p_sampling_from_probs")
    if logits.size(0) == 0:
        return _empty_ids(logits)
    return _ids(_sampling().top_p_sampling_from_probs(
        _probs(logits), _p_tensor(p, logits), deterministic=True, seed=_seed(seed), offset=0))


def top_k_sampling_from_probs(logits, *, k=None, p=None, seed: int):
    """flashinfer.sampling.top_k_sampling_from_probs(softmax(logits) fp32, k): rejection
    sampling, x accepted iff #{j : p_j > p_x} < k (boundary ties over-accepted: keep_all_ties
    by probability value). fp32; contiguous probs; explicit seed, offset 0. Top-k only."""
    check_seed("seed", seed)  # first: the adapters of one filter refuse the other one
    check_top_k_top_p(logits, k, p).check_now()
    _require_off("top-p", p, _p_off, "top_k_sampling_from_probs")
    if logits.size(0) == 0:
        return _empty_ids(logits)
    return _ids(_sampling().top_k_sampling_from_probs(
        _probs(logits), _k_tensor(k, logits), deterministic=True, seed=_seed(seed), offset=0))


def sampling_from_logits(logits, *, k=None, p=None, seed: int):
    """flashinfer.sampling.sampling_from_logits(logits): categorical over softmax(logits)
    (Gumbel-max on `.float()` logits; Philox subsequence = row * V + col). No filter: k and
    p must be off. Contiguity: fp32 input reaches the kernel as given (strided raises,
    misaligned offsets refused); bf16/fp16 are copied by `.float()`. Explicit seed, offset 0."""
    check_seed("seed", seed)  # first: the adapters of one filter refuse the other one
    check_top_k_top_p(logits, k, p).check_now()
    _require_off("top-k", k, _k_off(logits), "sampling_from_logits")
    _require_off("top-p", p, _p_off, "sampling_from_logits")
    if logits.size(0) == 0:
        return _empty_ids(logits)
    if _reaches_kernel_as_is(logits):
        _refuse_misaligned(logits, "sampling_from_logits")
    return _ids(_sampling().sampling_from_logits(logits, deterministic=True, seed=_seed(seed), offset=0))


# --- min-p (record min_p_sample) -----------------------------------------------------------

def min_p_sampling_from_probs(logits, *, min_p=None, seed: int):
    """flashinfer.sampling.min_p_sampling_from_probs(softmax(logits) fp32, min_p): keeps
    p >= min_p * max(p) in fp32 probability space (ours: l >= max + log(min_p) in log
    space; equal in exact arithmetic, may differ within rounding: the min_p_sample record's
    band), then samples (one pass, no rejection loop). Ties at the threshold are kept
    together (by value). min_p None -> 0 (off). fp32; contiguous probs; explicit seed,
    offset 0, Philox subsequence = row."""
    check_seed("seed", seed)  # first: the adapters of one filter refuse the other one
    check_min_p(logits, min_p).check_now()
    if logits.size(0) == 0:
        return _empty_ids(logits)
    m = torch.zeros(logits.size(0), dtype=torch.float32, device=logits.device) if min_p is None else min_p
    return _ids(_sampling().min_p_sampling_from_probs(
        _probs(logits), m, deterministic=True, seed=_seed(seed), offset=0))


# --- softmax (record softmax) --------------------------------------------------------------

def softmax(logits: torch.Tensor, temperature: torch.Tensor | None = None) -> torch.Tensor:
    """flashinfer.sampling.softmax(logits, temperature): online (single-pass) safe softmax of
    l / T in fp32 (`.float()` upcast; per-row float32 T tensor; None -> no scaling).
    Output fp32 [B, V]. Contiguity: fp32 input reaches the kernel as given (strided raises,
    misaligned offsets refused); bf16/fp16 are copied. No seed."""
    check_softmax_temperature(logits, temperature)
    if logits.numel() == 0:
        return torch.empty(logits.shape, dtype=torch.float32, device=logits.device)
    if _reaches_kernel_as_is(logits):
        _refuse_misaligned(logits, "softmax")
    return _sampling().softmax(logits, temperature=temperature)
