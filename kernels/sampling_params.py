"""`apply_sampling_params`: the whole sampler, composed from our Triton kernels.

Order (vLLM Model Runner V2's): allowed_token_ids -> logit_bias -> min_tokens
(`samplecheck.kernels.logit_bias`), penalties, bad words, temperature, min_p, top-k/top-p, Gumbel-max
sampling, logprobs. Every step works in place on the logits, in their own dtype; there is
no fp32 copy. The only clone is the raw tensor, taken (in the logits' dtype) when
`num_logprobs` is set and the mode is `raw_logprobs` or `raw_logits`.

Contract:
- `logits` [B, V] fp32/bf16/fp16, any row stride, column stride 1: on return it holds
  the processed logits (masked entries -inf); row-stride gaps are never touched.
- Greedy rows (temperature 0) are left undivided and take the argmax (lowest id on ties)
  of the processed logits; min_p and top-k/top-p still apply to them (the maximum always
  survives).
- Returns `SamplerOutput(sampled int64 [B], processed_logits (the input tensor),
  logprobs)`, plus `valid` (bool [B], computed on access from processed_logits): False
  for rows with no valid token (every processed entry -inf or NaN: e.g. an allowlist of
  stop ids, or an all-NaN row); their sampled id is 0 and means nothing. logprobs is None
  when `num_logprobs` is None, else
  `samplecheck.kernels.logprobs.Logprobs` computed on the tensor the mode names: the raw clone or the
  processed logits, as log-softmax values (`*_logprobs`) or the logit values themselves
  (`*_logits`). Ranks count entries >= the sampled one in that tensor.
- Bad input (docs/validation.md): every field is validated in ONE phase before anything
  is written, so an error leaves the logits and every field bitwise unchanged; messages
  name the SamplingBatch field (`top_k`, `top_p`, `seeds`, ...) and its range. The value
  checks of every field form one guard (`samplecheck.kernels.validation`: eager, deferred,
  captured or off); the ops' kernels then launch under that guard's flag with no checks of
  their own (each op's `launch_*`, the part of its entry point after its checks), so a bad
  field makes every op write nothing, and no call synchronises on CUDA by default.
- Groups and defaults: the penalties run when any of `repetition_penalty`,
  `frequency_penalty`, `presence_penalty` is set; the others then default to off (1, 0,
  0), and missing `prompt_token_ids` / `output_token_ids` to empty lists. Bad words with
  no `output_token_ids` see an empty history. `logit_bias_ids` and `logit_bias_values`
  come together, and so do `stop_token_ids`, `min_tokens` and `output_len` (ValueError).
- Memory beyond the output: the raw clone (B * V * element size, only in raw modes), the
  top-k/top-p buffers (`samplecheck.kernels.top_k_top_p.scratch_bytes`) and O(B * list
  length) for token lists.
"""

from dataclasses import dataclass, fields, replace
from typing import NamedTuple

import torch

from samplecheck.kernels.bad_words import check_bad_words, launch_bad_words
from samplecheck.kernels.guard import ValueGuard
from samplecheck.kernels.gumbel import check_gumbel, launch_gumbel
from samplecheck.kernels.logit_bias import check_logit_bias, launch_logit_bias
from samplecheck.kernels.logprobs import Logprobs, check_num_logprobs, launch_logprobs
from samplecheck.kernels.min_p import launch_min_p
from samplecheck.kernels.penalties import check_penalties, launch_penalties
from samplecheck.kernels.temperature import check_temperature, launch_temperature
from samplecheck.kernels.top_k_top_p import launch_top_k_top_p
from samplecheck.kernels.validation import check_logits, check_min_p, check_top_k_top_p

LOGPROBS_MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")


@dataclass(frozen=True)
class SamplingBatch:
    """Per-row sampling parameters of a batch, as tensors on the logits' device (see each
    op's module for shapes and ranges). A None field turns its op off for every row; the
    groups and their defaults are in the module docstring."""

    seeds: torch.Tensor
    positions: torch.Tensor
    temperature: torch.Tensor | None = None
    allowed_token_ids: torch.Tensor | None = None
    logit_bias_ids: torch.Tensor | None = None
    logit_bias_values: torch.Tensor | None = None
    stop_token_ids: torch.Tensor | None = None
    min_tokens: torch.Tensor | None = None
    output_len: torch.Tensor | None = None
    prompt_token_ids: torch.Tensor | None = None
    output_token_ids: torch.Tensor | None = None
    repetition_penalty: torch.Tensor | None = None
    frequency_penalty: torch.Tensor | None = None
    presence_penalty: torch.Tensor | None = None
    bad_words: torch.Tensor | None = None
    min_p: torch.Tensor | None = None
    top_k: torch.Tensor | None = None
    top_p: torch.Tensor | None = None
    num_logprobs: int | None = None
    logprobs_mode: str = "raw_logprobs"

    def __repr__(self) -> str:
        set_fields = [f.name for f in fields(self) if getattr(self, f.name) is not None]
        return f"SamplingBatch({', '.join(set_fields)}, num_logprobs={self.num_logprobs}, mode={self.logprobs_mode})"


class SamplerOutput(NamedTuple):
    sampled: torch.Tensor
    processed_logits: torch.Tensor
    logprobs: Logprobs | None

    @property
    def valid(self) -> torch.Tensor:
        """bool [B]: the row's processed logits hold an entry that is neither -inf nor NaN
        (else its sampled id is 0 and carries no meaning)."""
        return (self.processed_logits > float("-inf")).any(dim=-1)


PENALTY_DEFAULTS = {"repetition_penalty": 1.0, "frequency_penalty": 0.0, "presence_penalty": 0.0}


def with_defaults(params: SamplingBatch, logits: torch.Tensor) -> SamplingBatch:
    """`params` with the documented defaults of a partly given group filled in (module
    docstring); layouts are checked first, so the defaults match the batch."""
    batch, device = logits.size(0), logits.device
    filled = {}
    if any(getattr(params, name) is not None for name in PENALTY_DEFAULTS):
        for name, off in PENALTY_DEFAULTS.items():
            if getattr(params, name) is None:
                filled[name] = torch.full((batch,), off, dtype=torch.float32, device=device)
        if params.prompt_token_ids is None:
            filled["prompt_token_ids"] = torch.empty((batch, 0), dtype=torch.int64, device=device)
    if params.output_token_ids is None and (filled or params.bad_words is not None):
        filled["output_token_ids"] = torch.empty((batch, 0), dtype=torch.int64, device=device)
    return replace(params, **filled) if filled else params


def check_sampling_batch(logits: torch.Tensor, params: SamplingBatch) -> tuple[SamplingBatch, ValueGuard]:
    """Validate every field before anything is written (module docstring); returns the batch
    with its groups' defaults filled in and the guard holding every value check. Errors name
    the SamplingBatch field."""
    if not isinstance(params, SamplingBatch):
        raise TypeError(f"params must be a samplecheck.kernels.sampling_params.SamplingBatch, "
                        f"got {type(params).__name__}")
    check_logits(logits)
    if params.logprobs_mode not in LOGPROBS_MODES:
        raise ValueError(f"logprobs_mode must be one of {', '.join(LOGPROBS_MODES)}; got {params.logprobs_mode!r}")
    check_num_logprobs(params.num_logprobs, logits.size(1))
    p = with_defaults(params, logits)
    guard = ValueGuard(logits.device, "apply_sampling_params")
    check_logit_bias(logits, p.allowed_token_ids, p.logit_bias_ids, p.logit_bias_values, p.stop_token_ids,
                     p.min_tokens, p.output_len, guard)
    if p.repetition_penalty is not None:
        check_penalties(logits, p.prompt_token_ids, p.output_token_ids, p.repetition_penalty,
                        p.frequency_penalty, p.presence_penalty, guard)
    if p.bad_words is not None:
        check_bad_words(logits, p.bad_words, p.output_token_ids, guard)
    check_temperature(logits, p.temperature, guard)
    check_min_p(logits, p.min_p, guard)
    check_top_k_top_p(logits, p.top_k, p.top_p, names=("top_k", "top_p"), guard=guard)
    check_gumbel(logits, p.seeds, p.positions, None, guard)
    return p, guard


def apply_sampling_params(logits: torch.Tensor, params: SamplingBatch) -> SamplerOutput:
    """Process `logits` in place and sample one token per row (module docstring)."""
    p, guard = check_sampling_batch(logits, params)
    flag = guard.settle()
    raw = logits.clone() if p.num_logprobs is not None and p.logprobs_mode.startswith("raw") else None
    # Every field was checked above: the ops launch under the guard's flag, unchecked.
    launch_logit_bias(logits, p.allowed_token_ids, p.logit_bias_ids, p.logit_bias_values, p.stop_token_ids,
                      p.min_tokens, p.output_len, flag, False)
    if p.repetition_penalty is not None:
        launch_penalties(logits, p.prompt_token_ids, p.output_token_ids, p.repetition_penalty, p.frequency_penalty,
                         p.presence_penalty, flag, False)
    if p.bad_words is not None:
        launch_bad_words(logits, p.bad_words, p.output_token_ids, flag, False)
    launch_temperature(logits, p.temperature, flag, False)
    launch_min_p(logits, p.min_p, flag, False)
    launch_top_k_top_p(logits, p.top_k, p.top_p, flag, False)
    # The logits hold l / T already: the temperature only marks the greedy rows (T == 0).
    sampled = launch_gumbel(logits, p.seeds, p.positions, p.temperature, flag, False, divide=False)
    return SamplerOutput(sampled, logits, _logprobs(raw if raw is not None else logits, sampled, p, flag))


def _logprobs(source: torch.Tensor, sampled: torch.Tensor, params: SamplingBatch,
              flag: torch.Tensor | None) -> Logprobs | None:
    result = launch_logprobs(source, sampled, params.num_logprobs, flag, False)
    if result is None or params.logprobs_mode.endswith("logprobs"):
        return result
    return result._replace(logprobs=source.gather(1, result.token_ids).to(torch.float32))
