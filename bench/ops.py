"""The benchmarked calls: inputs of one size, and every op with its ours / torch / FlashInfer call.

Import this module only after `samplecheck.kernels.runtime.use_device(...)`: it imports the
kernels, whose Triton functions are compiled for the device chosen there.

Inputs (those of the production-kernels issue, #16): logits from `randn` (bf16 unless the
caller asks for fp16 or fp32); per-row
tensors temperature 0.7, min_p 0.05, top-k 50 (int64 for ours and torch, int32 for
FlashInfer), top-p 0.9; 512 prompt and 256 output ids with repetition 1.1, frequency 0.1,
presence 0.1; 16 distinct bias ids per row with randn values; 4 single-token bad words per
row; seeds 0..B-1 at position 0; 20 logprobs of a random sampled id. The pipeline takes all
of them except the bad words.

Every call first restores the working logits from a pristine copy (`Inputs.restore`), so the
in-place calls never see their own output; the benchmark subtracts the restore's own time.
Calls that do not write the logits (sampling, logprobs, FlashInfer) restore too, so every
figure is measured the same way.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch

from samplecheck.kernels.bad_words import apply_bad_words
from samplecheck.kernels.gumbel import gumbel_sample
from samplecheck.kernels.logit_bias import apply_logit_bias
from samplecheck.kernels.logprobs import compute_logprobs
from samplecheck.kernels.min_p import apply_min_p, apply_min_p_torch
from samplecheck.kernels.penalties import apply_penalties
from samplecheck.kernels.sampling_params import SamplingBatch, apply_sampling_params
from samplecheck.kernels.sampling_torch import min_p_sample_torch, multinomial_rows, top_k_top_p_sample_torch
from samplecheck.kernels.temperature import apply_temperature, apply_temperature_torch
from samplecheck.kernels.top_k_top_p import apply_top_k_top_p
from samplecheck.kernels.top_k_top_p_torch import apply_top_k_top_p_torch
from samplecheck.kernels.top_p_sample import top_p_sample

TEMPERATURE, MIN_P, TOP_K, TOP_P = 0.7, 0.05, 50, 0.9
PROMPT_IDS, OUTPUT_IDS, BIAS_IDS, BAD_WORDS, NUM_LOGPROBS = 512, 256, 16, 4, 20
PENALTIES = {"repetition_penalty": 1.1, "frequency_penalty": 0.1, "presence_penalty": 0.1}


@dataclass(frozen=True)
class Inputs:
    """The tensors of one benchmark size. `work` is what the calls process: a [B, V] view
    whose rows are `row_pad` entries apart beyond V (0: contiguous)."""

    pristine: torch.Tensor
    work: torch.Tensor
    rows: dict[str, torch.Tensor]  # per-row parameters, by name
    prompt: torch.Tensor
    output: torch.Tensor
    bias_ids: torch.Tensor
    bias_values: torch.Tensor
    bad_words: torch.Tensor
    seeds: torch.Tensor
    positions: torch.Tensor
    sampled: torch.Tensor

    def restore(self) -> torch.Tensor:
        return self.work.copy_(self.pristine)


def make_inputs(batch: int, vocab: int, device: str, *, seed: int = 0, row_pad: int = 0,
                dtype: torch.dtype = torch.bfloat16) -> Inputs:
    """The module docstring's inputs for a [batch, vocab] batch of `dtype` logits on `device`."""
    gen = torch.Generator(device=device).manual_seed(seed)

    def ids(*shape):
        return torch.randint(0, vocab, shape, generator=gen, device=device)

    def per_row(value, dtype=torch.float32):
        return torch.full((batch,), value, dtype=dtype, device=device)

    pristine = torch.randn(batch, vocab, generator=gen, device=device).to(dtype)
    work = torch.empty(batch, vocab + row_pad, dtype=pristine.dtype, device=device)[:, :vocab]
    bad_words = torch.full((batch, BAD_WORDS, 3), -1, dtype=torch.int64, device=device)
    bad_words[:, :, 0] = ids(batch, BAD_WORDS)
    rows = {"temperature": per_row(TEMPERATURE), "min_p": per_row(MIN_P), "top_p": per_row(TOP_P),
            "top_k": per_row(TOP_K, torch.int64), "top_k_int32": per_row(TOP_K, torch.int32),
            **{name: per_row(value) for name, value in PENALTIES.items()}}
    prompt, output = ids(batch, PROMPT_IDS), ids(batch, OUTPUT_IDS)
    # The bias ids: each row's BIAS_IDS largest of V uniform draws, ranked on the host: CUDA's
    # torch.topk reads memory it has not written (compute-sanitizer's initcheck reports it), which
    # would stand in every call's initcheck report (scripts/sanitize.sh) beside our kernels' own.
    bias_ids = torch.rand(batch, vocab, generator=gen, device=device).cpu().topk(min(BIAS_IDS, vocab)).indices
    return Inputs(
        pristine=pristine, work=work, rows=rows, prompt=prompt, output=output, bias_ids=bias_ids.to(device),
        bias_values=torch.randn(batch, min(BIAS_IDS, vocab), generator=gen, device=device),
        bad_words=bad_words, seeds=torch.arange(batch, dtype=torch.int64, device=device),
        positions=torch.zeros(batch, dtype=torch.int64, device=device), sampled=ids(batch))


@dataclass(frozen=True)
class Call:
    """One implementation of an op: what it calls (`name`) and the timed call, None when its
    library is not available here (the table then says n/a)."""

    name: str
    fn: Callable[[], object] | None


@dataclass(frozen=True)
class Op:
    """A row of the table: `key` is its stable id in the JSON, `label` its display name;
    `torch` and `flashinfer` are None where no matching call exists."""

    key: str
    label: str
    ours: Call
    torch: Call | None = None
    flashinfer: Call | None = None


def _restored(x: Inputs, call: Callable[[], object]) -> Callable[[], object]:
    def fn():
        x.restore()
        return call()
    return fn


def full_batch(x: Inputs) -> SamplingBatch:
    """Every parameter of the module docstring except the bad words, 20 logprobs."""
    r = x.rows
    return SamplingBatch(seeds=x.seeds, positions=x.positions, temperature=r["temperature"],
                         logit_bias_ids=x.bias_ids, logit_bias_values=x.bias_values, prompt_token_ids=x.prompt,
                         output_token_ids=x.output, repetition_penalty=r["repetition_penalty"],
                         frequency_penalty=r["frequency_penalty"], presence_penalty=r["presence_penalty"],
                         min_p=r["min_p"], top_k=r["top_k"], top_p=r["top_p"], num_logprobs=NUM_LOGPROBS)


def _flashinfer_calls(x: Inputs, fi) -> dict[str, Call]:
    """FlashInfer's matching calls by op key (fn None when `fi`, flashinfer.sampling, is None).
    The probability-space APIs get an fp32 softmax of the logits, timed with them."""
    r, w = x.rows, x.work

    def probs():
        return torch.softmax(w.float(), dim=-1)

    calls = {
        "top_k": ("top_k_mask_logits", lambda: fi.top_k_mask_logits(w, r["top_k_int32"])),
        "top_p": ("softmax + top_p_renorm_probs", lambda: fi.top_p_renorm_probs(probs(), r["top_p"])),
        "gumbel_sample": ("sampling_from_logits", lambda: fi.sampling_from_logits(w)),
        "top_k_sample": ("softmax + top_k_sampling_from_probs",
                         lambda: fi.top_k_sampling_from_probs(probs(), r["top_k_int32"])),
        "top_p_sample": ("softmax + top_p_sampling_from_probs",
                         lambda: fi.top_p_sampling_from_probs(probs(), r["top_p"])),
        "top_k_top_p_sample": ("top_k_top_p_sampling_from_logits",
                               lambda: fi.top_k_top_p_sampling_from_logits(w, r["top_k_int32"], r["top_p"])),
        "min_p_sample": ("softmax + min_p_sampling_from_probs",
                         lambda: fi.min_p_sampling_from_probs(probs(), r["min_p"])),
    }
    return {key: Call(name, _restored(x, fn) if fi is not None else None) for key, (name, fn) in calls.items()}


def operations(x: Inputs, fi=None) -> list[Op]:
    """Every op of the table, in the issue's order, then the masking + sampling pairs and
    the pipeline; `fi` is flashinfer.sampling or None."""
    r, w = x.rows, x.work
    k, p = r["top_k"], r["top_p"]
    fis = _flashinfer_calls(x, fi)
    batch = full_batch(x)

    def call(name, fn):
        return Call(name, _restored(x, fn))

    def then_sample(masked):
        return gumbel_sample(masked, seeds=x.seeds, positions=x.positions)

    T, min_p = r["temperature"], r["min_p"]
    penalties = {name: r[name] for name in PENALTIES}
    return [
        Op("temperature", f"temperature (T={TEMPERATURE})",
           call("apply_temperature", lambda: apply_temperature(w, T)),
           call("apply_temperature_torch", lambda: apply_temperature_torch(w, T))),
        Op("min_p", f"min_p ({MIN_P})",
           call("apply_min_p", lambda: apply_min_p(w, min_p)),
           call("apply_min_p_torch", lambda: apply_min_p_torch(w, min_p))),
        Op("top_k", f"top-k (k={TOP_K})",
           call("apply_top_k_top_p(k)", lambda: apply_top_k_top_p(w, k, None)),
           call("apply_top_k_top_p_torch(k)", lambda: apply_top_k_top_p_torch(w, k, None)), fis["top_k"]),
        Op("top_p", f"top-p alone (p={TOP_P})",
           call("apply_top_k_top_p(p)", lambda: apply_top_k_top_p(w, None, p)),
           call("apply_top_k_top_p_torch(p)", lambda: apply_top_k_top_p_torch(w, None, p)), fis["top_p"]),
        Op("top_k_top_p", "top-k + top-p",
           call("apply_top_k_top_p(k, p)", lambda: apply_top_k_top_p(w, k, p)),
           call("apply_top_k_top_p_torch(k, p)", lambda: apply_top_k_top_p_torch(w, k, p))),
        Op("penalties", f"penalties ({PROMPT_IDS} prompt + {OUTPUT_IDS} output ids)",
           call("apply_penalties", lambda: apply_penalties(w, prompt_token_ids=x.prompt, output_token_ids=x.output,
                                                           **penalties))),
        Op("logit_bias", f"logit_bias ({BIAS_IDS} ids)",
           call("apply_logit_bias", lambda: apply_logit_bias(w, logit_bias_ids=x.bias_ids,
                                                             logit_bias_values=x.bias_values))),
        Op("bad_words", f"bad_words ({BAD_WORDS} words)",
           call("apply_bad_words", lambda: apply_bad_words(w, bad_words=x.bad_words, output_token_ids=x.output))),
        Op("gumbel_sample", f"gumbel_sample (T={TEMPERATURE})",
           call("gumbel_sample", lambda: gumbel_sample(w, seeds=x.seeds, positions=x.positions, temperature=T)),
           call("multinomial_rows (fp32 softmax + multinomial)", lambda: multinomial_rows(w, 0)),
           fis["gumbel_sample"]),
        Op("logprobs", f"logprobs ({NUM_LOGPROBS})",
           call("compute_logprobs", lambda: compute_logprobs(w, sampled=x.sampled, num_logprobs=NUM_LOGPROBS))),
        Op("top_k_sample", "top-k sample",
           call("apply_top_k_top_p(k) + gumbel_sample", lambda: then_sample(apply_top_k_top_p(w, k, None))),
           call("top_k_top_p_sample_torch(k)", lambda: top_k_top_p_sample_torch(w, k=k, seed=0)),
           fis["top_k_sample"]),
        Op("top_p_sample", "top-p sample",
           call("top_p_sample", lambda: top_p_sample(w, p, seeds=x.seeds, positions=x.positions)),
           call("top_k_top_p_sample_torch(p)", lambda: top_k_top_p_sample_torch(w, p=p, seed=0)),
           fis["top_p_sample"]),
        Op("top_k_top_p_sample", "top-k + top-p sample",
           call("apply_top_k_top_p(k, p) + gumbel_sample", lambda: then_sample(apply_top_k_top_p(w, k, p))),
           call("top_k_top_p_sample_torch(k, p)", lambda: top_k_top_p_sample_torch(w, k=k, p=p, seed=0)),
           fis["top_k_top_p_sample"]),
        Op("min_p_sample", "min_p sample",
           call("apply_min_p + gumbel_sample", lambda: then_sample(apply_min_p(w, min_p))),
           call("min_p_sample_torch", lambda: min_p_sample_torch(w, min_p=min_p, seed=0)), fis["min_p_sample"]),
        Op("pipeline", f"whole pipeline (all ops but bad_words, {NUM_LOGPROBS} logprobs)",
           call("apply_sampling_params", lambda: apply_sampling_params(w, batch))),
    ]
