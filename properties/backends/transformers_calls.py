"""Hugging Face transformers' logits processors, called as its generation loops call them.

Contract of every adapter: a samplecheck record's call (docs/backends.md) in, the record's
output out; in between, only what transformers' own call site does:
- `generate()` (transformers/generation/utils.py, `_sample`) copies the last position's logits
  to fp32 (`.to(copy=True, dtype=torch.float32)`), runs the processor list built from one
  `GenerationConfig` on `(input_ids, scores)`, and samples with `softmax` + `torch.multinomial`.
  The processors return new tensors; the adapters store the fp32 result back into the
  caller's logits (rounded to nearest even once: the records' in-place contract).
- Continuous batching (`generation/continuous_batching`) runs the same fp32 copy through its
  per-request processors, which take one value per row as a float32 (viewed int32) tensor.

Per-row parameters: one `generate()` call takes one value per parameter for its whole batch
(a temperature, a bad-words list, a bias dict, ...), so the rows that share their values (and,
where the processor reads it, their history) are one call, as a batch of requests sharing a
generation config (`_groups`). The continuous-batching adapters take the whole batch, as that
engine does.

"Off" values map to what generate builds: no temperature warper at T = 1 or for greedy
rows (T = 0), no top-k warper at k <= 0 (transformers' top_k = 0; it rejects -1), no top-p
warper at p = 1, no repetition processor at r = 1, no processor for an empty list.

transformers is imported on first call (`_hf`), never at import of this module.
"""

import functools
import math

import torch

FP32 = torch.float32


@functools.cache
def _hf():
    from transformers.generation import logits_process
    return logits_process


@functools.cache
def _cb():
    from transformers.generation.continuous_batching import cb_logits_processors
    return cb_logits_processors


def _groups(keys: list) -> dict:
    """{key: [rows with that key]}, in first-row order."""
    groups: dict = {}
    for row, key in enumerate(keys):
        groups.setdefault(key, []).append(row)
    return groups


def _prefix(row: list[int]) -> list[int]:
    """A row's ids before its first -1."""
    return row[:row.index(-1)] if -1 in row else row


def _store(before: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """The processed fp32 `scores` in `before`'s dtype: the entries the processors changed,
    rounded to nearest even; the others keep `before`'s bits (a NaN's sign and payload, which
    a conversion to bf16 or fp16 would not keep: transformers itself stays in fp32)."""
    changed = scores.view(torch.int32) != before.to(FP32).view(torch.int32)
    return torch.where(changed, scores.to(before.dtype), before)


def _run(logits: torch.Tensor, rows: list[int], input_ids: torch.Tensor, processors) -> None:
    """generate's step on `rows`: an fp32 copy of their logits through `processors` in order,
    the result stored back into those rows (nothing to do without a processor)."""
    if not processors:
        return
    index = torch.tensor(rows, device=logits.device)
    before = logits.index_select(0, index)
    scores = before.to(copy=True, dtype=FP32)
    for processor in processors:
        scores = processor(input_ids, scores)
    logits.index_copy_(0, index, _store(before, scores))


def _no_ids(rows: int, device) -> torch.LongTensor:
    """input_ids for processors that do not read them (warpers): a history of length 0."""
    return torch.zeros((rows, 0), dtype=torch.long, device=device)


def _row_values(values: torch.Tensor | None, batch: int) -> list:
    return [None] * batch if values is None else values.tolist()


# --- generate(): warpers ------------------------------------------------------------------------

def temperature(logits, temperature=None):
    """`TemperatureLogitsWarper(T)` per group of rows sharing T; T = 0 rows are greedy and
    T = 1 rows get no warper (generate)."""
    for t, rows in _groups(_row_values(temperature, logits.size(0))).items():
        if t not in (None, 0.0, 1.0):
            _run(logits, rows, _no_ids(len(rows), logits.device), [_hf().TemperatureLogitsWarper(t)])
    return logits


def _top_k_top_p_processors(k, p) -> list:
    """generate's warpers for one (k, p): `TopKLogitsWarper` then `TopPLogitsWarper`, defaults
    as generate passes them for one beam (min_tokens_to_keep = 1, filter_value = -inf)."""
    processors = [_hf().TopKLogitsWarper(int(k))] if k is not None and k > 0 else []
    return processors + ([_hf().TopPLogitsWarper(p)] if p is not None and p < 1.0 else [])


def top_k_top_p(logits, k=None, p=None):
    batch = logits.size(0)
    for (kk, pp), rows in _groups(list(zip(_row_values(k, batch), _row_values(p, batch)))).items():
        _run(logits, rows, _no_ids(len(rows), logits.device), _top_k_top_p_processors(kk, pp))
    return logits


def min_p(logits, min_p=None):
    """`MinPLogitsWarper(min_p)` per group of rows sharing min_p (generate adds it for any
    min_p given, 0 included)."""
    for value, rows in _groups(_row_values(min_p, logits.size(0))).items():
        if value is not None:
            _run(logits, rows, _no_ids(len(rows), logits.device), [_hf().MinPLogitsWarper(value)])
    return logits


def sample(logits, *, k=None, p=None, seed: int):
    """generate's sampling step on a copy: the top-k / top-p warpers per group of rows, then
    `softmax` and one `torch.multinomial(probs, 1)` over the batch, its generator seeded with
    `seed` (as `set_seed(seed)` seeds generate's global one)."""
    scores = logits.to(copy=True, dtype=FP32)
    top_k_top_p(scores, k, p)
    probs = torch.nn.functional.softmax(scores, dim=-1)
    generator = torch.Generator(device=logits.device).manual_seed(seed)
    return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(1)


# --- generate(): processors with token-id lists ------------------------------------------------

def repetition_penalty(logits, *, prompt_token_ids, output_token_ids, repetition_penalty, frequency_penalty,
                       presence_penalty):
    """`RepetitionPenaltyLogitsProcessor(r, prompt_ignore_length)` per group of rows sharing r
    (none at r = 1), on generate's `input_ids`: each row's prompt (ids in [0, V)) then its
    output (before the first -1, ids in [0, V)), left-padded to the group's longest with
    padding that `prompt_ignore_length` (generate: the attention mask's leading zeros) skips.
    transformers has no frequency or presence penalty: a row asking for one raises."""
    if bool((frequency_penalty != 0).any() | (presence_penalty != 0).any()):
        raise ValueError("transformers has no frequency or presence penalty")
    vocab, device = logits.size(1), logits.device

    def real(ids: list[int]) -> list[int]:
        return [t for t in ids if 0 <= t < vocab]
    histories = [real(prompt) + real(_prefix(output))
                 for prompt, output in zip(prompt_token_ids.tolist(), output_token_ids.tolist())]
    for r, rows in _groups(repetition_penalty.tolist()).items():
        if r == 1.0:
            continue
        width = max(len(histories[row]) for row in rows)
        pads = [width - len(histories[row]) for row in rows]
        ids = torch.tensor([[0] * pad + histories[row] for pad, row in zip(pads, rows)], dtype=torch.long,
                           device=device).view(len(rows), width)
        ignore = torch.tensor(pads, dtype=torch.long, device=device)
        _run(logits, rows, ids, [_hf().RepetitionPenaltyLogitsProcessor(r, prompt_ignore_length=ignore)])
    return logits


def bad_words(logits, *, bad_words, output_token_ids):
    """`NoBadWordsLogitsProcessor(words)` per group of rows sharing their words and their
    output before its first -1 (their `input_ids`: a prompt given as embeddings, so generate's
    input_ids hold only the output); no EOS id given (generate drops a single-token word equal
    to the model's EOS)."""
    device = logits.device
    keys = [(tuple(tuple(w) for w in map(_prefix, words) if w), tuple(_prefix(past)))
            for words, past in zip(bad_words.tolist(), output_token_ids.tolist())]
    for (words, past), rows in _groups(keys).items():
        if words:
            ids = torch.tensor([past] * len(rows), dtype=torch.long, device=device).view(len(rows), len(past))
            _run(logits, rows, ids, [_hf().NoBadWordsLogitsProcessor([list(w) for w in words])])
    return logits


def _lists(ids: torch.Tensor | None, batch: int) -> list[tuple[int, ...]]:
    return [()] * batch if ids is None else [tuple(_prefix(row)) for row in ids.tolist()]


PROMPT = 3  # prompt tokens before the output: min_new_tokens counts past them


def _allowed(ids: tuple[int, ...], batch_id: int, sent: torch.Tensor) -> list[int]:
    """prefix_allowed_tokens_fn: the same allowed ids for every row of the call."""
    return list(ids)


def logit_bias(logits, *, allowed_token_ids=None, logit_bias_ids=None, logit_bias_values=None,
               stop_token_ids=None, min_tokens=None, output_len=None):
    """Per group of rows sharing all their parameters, generate's processors in generate's
    order: `SequenceBiasLogitsProcessor` with one-token sequences {(id,): bias},
    `MinNewTokensLengthLogitsProcessor` (the stop ids as EOS ids, min_new_tokens = min_tokens,
    input_ids of PROMPT + output_len tokens), then `PrefixConstrainedLogitsProcessor` whose
    function returns the allowed ids."""
    batch = logits.size(0)
    bias_ids = _lists(logit_bias_ids, batch)
    values = [()] * batch if logit_bias_values is None else logit_bias_values.tolist()
    # the sign of a zero bias kept in the key: l + -0.0 and l + 0.0 differ at l = -0.0
    biases = [tuple((i, b, math.copysign(1.0, b)) for i, b in zip(ids, row)) for ids, row in zip(bias_ids, values)]
    keys = zip(_lists(allowed_token_ids, batch), biases, _lists(stop_token_ids, batch),
               _row_values(min_tokens, batch), _row_values(output_len, batch))
    hf = _hf()
    for (allowed, bias, stops, least, done), rows in _groups(list(keys)).items():
        processors = [hf.SequenceBiasLogitsProcessor([[[i], b] for i, b, _ in bias])] if bias else []
        if stops and (least or 0) > 0:
            processors.append(hf.MinNewTokensLengthLogitsProcessor(PROMPT, least, list(stops), device=logits.device))
        if allowed:
            processors.append(hf.PrefixConstrainedLogitsProcessor(functools.partial(_allowed, allowed), num_beams=1))
        # only input_ids' length is read (min_new_tokens); an expanded view holds no memory
        ids = torch.zeros((1, 1), dtype=torch.long, device=logits.device).expand(len(rows), PROMPT + (done or 0))
        _run(logits, rows, ids, processors)
    return logits


# --- continuous batching: per-request processors -------------------------------------------------

def _as_int32(values: list[float]) -> torch.Tensor:
    """A float32 per-row argument as continuous batching stores it (viewed as int32)."""
    return torch.tensor(values, dtype=FP32).view(torch.int32)


def _run_batch(logits: torch.Tensor, steps) -> None:
    """continuous batching's step: an fp32 copy of the whole batch through `steps`
    ((processor, argument) pairs), the result stored back."""
    scores = logits.to(copy=True, dtype=FP32)
    for processor, argument in steps:
        scores = processor(scores, argument.to(logits.device))
    logits.copy_(_store(logits, scores))


def cb_temperature(logits, temperature=None):
    """`ContinuousBatchingTemperatureLogitsWarper` with each row's temperature (a request's
    `temperature` kwarg; the batch default 1 where the record passes none)."""
    if temperature is not None and logits.size(0):
        warper = _cb().ContinuousBatchingTemperatureLogitsWarper(_hf().TemperatureLogitsWarper(0.7))
        _run_batch(logits, [(warper, _as_int32(temperature.tolist()))])
    return logits


def cb_top_k_top_p(logits, k=None, p=None):
    """`ContinuousBatchingTopKLogitsWarper` then `...TopPLogitsWarper` on the batch, each with
    the rows' values (k as its prepare_tensor_args stores it: at least min_tokens_to_keep = 1;
    a request turns top-k off with k >= V, so k <= 0 is passed as V)."""
    batch, vocab = logits.shape
    if not batch:
        return logits
    cb, hf, steps = _cb(), _hf(), []
    if k is not None:
        ks = [kk if kk > 0 else vocab for kk in k.tolist()]
        steps.append((cb.ContinuousBatchingTopKLogitsWarper(hf.TopKLogitsWarper(vocab)),
                      torch.tensor(ks, dtype=torch.int32)))
    if p is not None:
        steps.append((cb.ContinuousBatchingTopPLogitsWarper(hf.TopPLogitsWarper(0.9)), _as_int32(p.tolist())))
    _run_batch(logits, steps)
    return logits
