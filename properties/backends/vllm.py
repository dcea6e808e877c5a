"""vLLM's sampling kernels as backends of our records (the vLLM pack).

Each adapter maps one record's contract (docs/backends.md) onto one vLLM call and does
nothing else: id lists to vLLM's representation (its pad ids, Python lists, per-request
state in permuted slots for Model Runner V2), "off" parameters to vLLM's encoding (top-k
off = V), and back. vLLM's code is called, never copied: `vllm_source.module` imports the
installed `vllm` or the folder named by SAMPLECHECK_VLLM_KERNELS.

`PACK` lists (record, Backend) pairs with each backend's declared semantics (the
conventions in which vLLM legitimately differs from our strict contract, with the reason)
and its strict xfails (the defects found, docs/findings-vllm.md); it needs no vLLM. `pack()`
(entry point `samplecheck.packs: vllm`, docs/packs.md) returns it whenever a vLLM source is there.
"""

import torch

from samplecheck.backends import vllm_source as src
from samplecheck.families.logprobs import ranks_differ_only_at_neg_inf
from samplecheck.inputs.pools import expand_pool
from samplecheck.judging.edge_values import kept_set_differs_in_rows_holding
from samplecheck.kernels.logprobs import Logprobs
from samplecheck.registry import catalog
from samplecheck.registry.checks import rows_dropping_underflowed_only, rows_left_unmasked_only
from samplecheck.registry.records import Backend, Mark, PackUnavailable

MODULE = "samplecheck.backends.vllm"


def _vllm_k(k: torch.Tensor | None, vocab: int) -> torch.Tensor | None:
    """vLLM's top-k argument: int32, V where top-k is off (k <= 0 or k >= V); None when no
    row uses top-k (SamplingMetadata's no_top_k)."""
    if k is None:
        return None
    k = torch.where((k <= 0) | (k >= vocab), vocab, k).to(torch.int32)
    return None if bool((k == vocab).all()) else k


def _vllm_p(p: torch.Tensor | None) -> torch.Tensor | None:
    """vLLM's top-p argument: None when no row uses top-p (every p 1: no_top_p)."""
    return None if p is None or bool((p == 1).all()) else p


def _any(*values: torch.Tensor | None, off: float) -> bool:
    """Whether some row of some per-row tensor is not `off`: vLLM's host code launches an op
    only for a batch where a request uses it."""
    return any(v is not None and bool((v != off).any()) for v in values)


def _uses_penalties(repetition_penalty, frequency_penalty, presence_penalty) -> bool:
    """Whether some row uses a penalty (vLLM's no_penalties / use_penalty, negated)."""
    return _any(repetition_penalty, off=1.0) or _any(frequency_penalty, presence_penalty, off=0.0)


# --- V1 (vllm/v1/sample/ops) ------------------------------------------------------------------

def v1_triton_top_k_top_p(logits, k=None, p=None):
    """`apply_top_k_top_p_triton` (fp32 logits; vLLM dispatches it for batch >= 8 on GPU), not
    called when neither filter is used (vLLM's dispatcher returns first)."""
    k, p = _vllm_k(k, logits.size(1)), _vllm_p(p)
    if k is None and p is None:
        return logits
    return src.module("v1_topk_topp_triton").apply_top_k_top_p_triton(logits, k, p)


def v1_torch_top_k_top_p(logits, k=None, p=None):
    """`apply_top_k_top_p_pytorch` (the sort path; vLLM's path for small batches), not called
    when neither filter is used."""
    k, p = _vllm_k(k, logits.size(1)), _vllm_p(p)
    if k is None and p is None:
        return logits
    return src.module("v1_topk_topp_sampler").apply_top_k_top_p_pytorch(logits, k, p)


def v1_torch_top_k_only(logits, k=None, p=None):
    """`apply_top_k_only` (top-k by torch.topk, no sort; taken when CPU syncs are allowed), not
    called when no row uses top-k."""
    k = _vllm_k(k, logits.size(1))
    return logits if k is None else src.module("v1_topk_topp_sampler").apply_top_k_only(logits, k)


def v1_torch_sample(logits, *, k=None, p=None, seed: int):
    """V1's native sampling path on a copy: fp32 logits, `apply_top_k_top_p_pytorch`, fp32
    softmax, `random_sample` (exponential race) with one torch.Generator per row seeded
    from (seed, row), as for seeded requests."""
    sampler = src.module("v1_topk_topp_sampler")
    x = logits.to(torch.float32, copy=True)
    k, p = _vllm_k(k, x.size(1)), _vllm_p(p)
    if k is not None or p is not None:
        x = sampler.apply_top_k_top_p_pytorch(x, k, p)
    probs = x.softmax(dim=-1, dtype=torch.float32)
    generators = {row: torch.Generator(device=x.device).manual_seed((seed + row * 0x9E3779B9) % 2**63)
                  for row in range(x.size(0))}
    return sampler.random_sample(probs, generators).to(torch.int64)


def v1_penalties(logits, *, prompt_token_ids, output_token_ids, repetition_penalty, frequency_penalty,
                 presence_penalty):
    """`apply_all_penalties`: the prompt padded with V (vLLM's pad id; our -1 padding
    mapped to it), the output as Python lists (vLLM turns its -1 placeholders into V); not
    called when no row uses a penalty (SamplingMetadata's no_penalties)."""
    vocab = logits.size(1)
    if not _uses_penalties(repetition_penalty, frequency_penalty, presence_penalty):
        return logits
    prompt = torch.where(prompt_token_ids == -1, vocab, prompt_token_ids).to(torch.int64)
    return src.module("v1_penalties").apply_all_penalties(
        logits, prompt, presence_penalty, frequency_penalty, repetition_penalty, output_token_ids.tolist())


def v1_bad_words(logits, *, bad_words, output_token_ids):
    """`apply_bad_words` with {row: [word, ...]} (empty words dropped) and the past lists; not
    called when no row has a word (the sampler calls it only for a non-empty mapping)."""
    words = {row: [w for w in src.prefixes(row_words) if w] for row, row_words in enumerate(bad_words)}
    words = {r: w for r, w in words.items() if w}
    if words:
        src.module("v1_bad_words").apply_bad_words(logits, words, src.prefixes(output_token_ids))
    return logits


# --- Model Runner V2 (vllm/v1/worker/gpu/sample) ---------------------------------------------

def mrv2_temperature(logits, temperature=None):
    """`apply_temperature`, skipped by vLLM's host code when no row needs it (every
    temperature 0, greedy, or 1)."""
    if temperature is not None and bool(((temperature != 0) & (temperature != 1)).any()):
        slot = src.slots(logits.size(0), logits.device)
        src.module("mrv2_gumbel").apply_temperature(logits, slot, src.per_request(temperature, slot, 7.0))
    return logits


def mrv2_gumbel_sample(logits, *, seeds, positions, temperature=None):
    """`gumbel_sample(apply_temperature=True)`: seeds and temperatures per request slot,
    positions per row; T = 1 where the record passes none."""
    batch = logits.size(0)
    slot = src.slots(batch, logits.device)
    t = torch.ones(batch, dtype=torch.float32, device=logits.device) if temperature is None else temperature
    return src.module("mrv2_gumbel").gumbel_sample(
        logits, slot, src.per_request(t, slot, 7.0), src.per_request(seeds, slot, 12345), positions,
        apply_temperature=True)


def mrv2_min_p(logits, min_p=None):
    """`apply_min_p`, skipped when no row uses min-p (every min_p 0)."""
    if _any(min_p, off=0.0):
        slot = src.slots(logits.size(0), logits.device)
        src.module("mrv2_min_p").apply_min_p(logits, slot, src.per_request(min_p, slot, 0.5))
    return logits


PROMPT_LEN = 5  # MRV2 positions count the prompt: the last token of a row is at PROMPT_LEN + output_len - 1


def mrv2_logit_bias(logits, *, allowed_token_ids=None, logit_bias_ids=None, logit_bias_values=None,
                    stop_token_ids=None, min_tokens=None, output_len=None):
    """`apply_logit_bias` with the state `LogitBiasState.add_request` builds: int32 id lists
    and counts per slot, min_len = prompt_len + min_tokens, stop ids only when min_tokens > 0;
    pos, as vLLM's sampler passes it, the position of the row's last token (prompt_len +
    output_len - 1). Not launched when no request uses an allowlist, a bias or active stop ids."""
    batch, device = logits.size(0), logits.device
    slot = src.slots(batch, device)
    empty = [[] for _ in range(batch)]

    def lists(ids):
        rows = empty if ids is None else src.prefixes(ids)
        width = max((len(r) for r in rows), default=0)
        return (torch.tensor([len(r) for r in rows], dtype=torch.int32, device=device),
                src.padded(rows, width, 0, torch.int32, device))

    n_allowed, allowed = lists(allowed_token_ids)
    n_bias, bias_ids = lists(logit_bias_ids)
    bias_rows = [v[:n] for v, n in zip(logit_bias_values.tolist(), n_bias.tolist())] if logit_bias_ids is not None else empty
    bias = src.padded(bias_rows, bias_ids.size(1), 0.0, torch.float32, device)
    n_stop, stop = lists(stop_token_ids)
    mins = torch.zeros(batch, dtype=torch.int32, device=device) if min_tokens is None else min_tokens.to(torch.int32)
    n_stop = torch.where(mins > 0, n_stop, 0)
    if not _any(n_allowed, n_bias, n_stop, off=0):
        return logits
    done = torch.zeros(batch, dtype=torch.int64, device=device) if output_len is None else output_len.to(torch.int64)
    src.module("mrv2_logit_bias").apply_logit_bias(
        logits, slot, PROMPT_LEN + done - 1,
        src.per_request(n_allowed, slot, 0), src.per_request(allowed, slot, 0),
        src.per_request(n_bias, slot, 0), src.per_request(bias_ids, slot, 0), src.per_request(bias, slot, 0.0),
        src.per_request(PROMPT_LEN + mins, slot, 0), src.per_request(n_stop, slot, 0), src.per_request(stop, slot, 0))
    return logits


def _token_history(prompt_rows, output_rows, batch, device):
    """MRV2's `all_token_ids` (prompt then output, int32) and the lengths, per row."""
    rows = [p + o for p, o in zip(prompt_rows, output_rows)]
    width = max((len(r) for r in rows), default=0)
    return (src.padded(rows, width, 0, torch.int32, device),
            torch.tensor([len(p) for p in prompt_rows], dtype=torch.int32, device=device),
            torch.tensor([len(r) for r in rows], dtype=torch.int32, device=device))


def mrv2_penalties(logits, *, prompt_token_ids, output_token_ids, repetition_penalty, frequency_penalty,
                   presence_penalty):
    """`bincount` then `apply_penalties` (no draft tokens: local positions 0). MRV2 stores
    only real tokens, so the ids our contract ignores (-1, V) are left out of its history.
    Not launched when no request uses a penalty."""
    batch, vocab = logits.shape
    if not _uses_penalties(repetition_penalty, frequency_penalty, presence_penalty):
        return logits
    device = logits.device
    slot = src.slots(batch, device)

    def real(ids):
        return [[t for t in row if 0 <= t < vocab] for row in ids.tolist()]
    history, prompt_len, total_len = _token_history(real(prompt_token_ids), real(output_token_ids), batch, device)
    reqs = src.max_requests(batch)
    prompt_mask = torch.full((reqs, (vocab + 31) // 32), -1, dtype=torch.int32, device=device)
    counts = torch.full((reqs, vocab), 99, dtype=torch.int32, device=device)
    mrv2 = src.module("mrv2_penalties")
    mrv2.bincount(slot, src.per_request(history, slot, 0), src.per_request(prompt_len, slot, 0),
                  src.per_request(total_len, slot, 0), prompt_mask, counts, max([1, *total_len.tolist()]))
    zeros = torch.zeros(batch, dtype=torch.int32, device=device)
    mrv2.apply_penalties(logits, slot, zeros, zeros, src.per_request(repetition_penalty, slot, 1.5),
                         src.per_request(frequency_penalty, slot, 0.5), src.per_request(presence_penalty, slot, 0.5),
                         prompt_mask, counts)
    return logits


BAD_WORDS_PROMPT = [0, 1, 2]  # prompt tokens before the output: never part of the past


def mrv2_bad_words(logits, *, bad_words, output_token_ids):
    """`apply_bad_words` with the flattened words and offsets `BadWordsState.add_request`
    builds (empty words dropped), the history prompt + output, no draft tokens."""
    batch, vocab = logits.shape
    device = logits.device
    slot = src.slots(batch, device)
    words = [[w for w in src.prefixes(row) if w] for row in bad_words]
    flat = [[t for w in row for t in w] for row in words]
    offsets = [[0] + [sum(len(w) for w in row[:i + 1]) for i in range(len(row))] for row in words]
    count = torch.tensor([len(row) for row in words], dtype=torch.int32, device=device)
    if not any(words):
        return logits
    prompt = [[t % vocab for t in BAD_WORDS_PROMPT] for _ in range(batch)]
    history, prompt_len, total_len = _token_history(prompt, src.prefixes(output_token_ids), batch, device)
    zeros = torch.zeros(batch, dtype=torch.int32, device=device)
    src.module("mrv2_bad_words").apply_bad_words(
        logits, slot,
        src.per_request(src.padded(flat, max(map(len, flat)), 0, torch.int32, device), slot, 0),
        src.per_request(src.padded(offsets, max(map(len, offsets)), 0, torch.int32, device), slot, 0),
        src.per_request(count, slot, 0), src.per_request(history, slot, 0),
        src.per_request(prompt_len, slot, 0), src.per_request(total_len, slot, 0),
        zeros, zeros, int(count.max()))
    return logits


def mrv2_logprobs(logits, *, sampled, num_logprobs):
    """`compute_topk_logprobs` (no per-request logprob ids). -1 (the whole vocab) is asked
    as V, as vLLM V1 maps it, and its columns are put in vocab order (our contract's order
    for -1; the set is vLLM's)."""
    if num_logprobs is None:
        return None
    vocab = logits.size(1)
    n = vocab if num_logprobs == -1 else num_logprobs
    out = src.module("mrv2_logprob").compute_topk_logprobs(logits, n, sampled)
    ids, values = out.logprob_token_ids.to(torch.int64), out.logprobs
    if num_logprobs == -1:
        order = ids[:, 1:].argsort(dim=-1)
        ids = torch.cat([ids[:, :1], ids[:, 1:].gather(1, order)], dim=1)
        values = torch.cat([values[:, :1], values[:, 1:].gather(1, order)], dim=1)
    return Logprobs(ids, values, out.selected_token_ranks.to(torch.int64))


# --- memory bounds (bytes beyond the inputs, as read from vLLM's code) ---------------------------
# Each counts the [B, V]-sized temporaries alive at once in vLLM's call plus this adapter's
# state, with 25% over for the allocator's rounding, plus 1 MiB for the O(B) tensors.
# torch.sort and torch.topk (k near V sorts) on CUDA, as measured on the H200 (run 10): the
# values and int64 indices out, their radix-sort double buffers and CUB's scratch, about
# 4 e + 32 bytes per entry for elements of e bytes (topk: 4 e + 40).


def _sort(e: float) -> float:
    return 4 * e + 32


def _topk(e: float) -> float:
    return 4 * e + 40


def _bound(per_entry: float, width=lambda logits, args: logits.size(1)):
    def extra(logits, args) -> int:
        return int(1.25 * per_entry(logits.element_size()) * logits.size(0) * (width(logits, args) + 1)) + 2**20
    return extra


MEMORY = {
    # the sort, then softmax (cumsum in place) and two bool masks
    "v1_torch_top_k_top_p": _bound(lambda e: _sort(e) + e + 2),
    # topk (at most V wide), one bool mask
    "v1_torch_top_k_only": _bound(lambda e: _topk(e) + 1),
    # fp32 copy, the sort path on it, fp32 probabilities and exponentials
    "v1_torch_sample": _bound(lambda e: 4 + (_sort(4) + 4 + 2) + 4 + 4),
    # two int64 [B, V + 1] bin counts, two bool masks, four fp32 [B, V] products and factors
    "v1_penalties": _bound(lambda e: 2 * 8 + 2 + 4 * 4),
    # MRV2 state: int32 counts [R, V] and prompt bits, R = B + 3 request slots (< 4 B)
    "mrv2_penalties": _bound(lambda e: 4 * (4 + 1)),
    # per-block argmax and max, [B, cdiv(V, 1024)] int64 + fp32
    "mrv2_gumbel_sample": _bound(lambda e: 12, width=lambda logits, args: -(-logits.size(1) // 1024)),
    # top-k values and ids, the id matrix, logprobs, and the vocab-order copies (n + 1 wide)
    "mrv2_logprobs": _bound(lambda e: 3 * 8 + 2 * 4 + 8, width=lambda logits, args: logits.size(1)
                            if args["num_logprobs"] == -1 else (args["num_logprobs"] or 0) + 1),
}


# --- the pack ----------------------------------------------------------------------------------

VALIDATED_UPSTREAM = tuple(Mark(
    "skip", "vLLM validates requests in SamplingParams and the state's add_request, before its kernels; the "
    "kernels take validated state and raise nothing themselves", test=test) for test in catalog.BAD_VALUE_TESTS)
INTERPRETER_BF16 = Mark(
    "skip", "the Triton CPU interpreter converts fp32 <-> bf16 wrongly (truncation, subnormals: "
    "samplecheck.kernels.rounding, finding F9), and vLLM's kernels use plain conversions: bf16 is judged on the GPU",
    dtype=torch.bfloat16, device="cpu")
FAR_LISTS_OUTSIDE_PACK = tuple(Mark(
    "skip", "not measured for vLLM: far id lists need 2**14 to 2**24 filler rows and 8-16 GiB of ids per case, and "
    "V1's bad-words host loop over those rows outlasts the pack's 5-minute budget (run 27)",
    test=test) for test in (catalog.LARGE_LIST_OFFSETS, catalog.LARGE_LIST_OFFSETS_CHECKED))
TORCH_PATH = {"tie_policy": "keep_all_ties", "top_p_boundary": "strict_by_position"}
# vLLM's filters keep a NaN logit or rank it highest: a row holding NaN has no contract there.
NAN_UNSPECIFIED = {"nan_policy": "row_unspecified"}


EMPTY_TOP_K_ONLY = ("outside vLLM's calls: apply_top_k_only reads k.max(), which raises on 0 rows, and V1's sampler "
                    "runs only in a step with a scheduled request (the model runner returns before sampling otherwise)")
P_ONE_MASKED = ("finding V2: V1 apply_top_k_top_p_pytorch masks tokens of a p = 1 (top-p off) row beside top-p rows "
                "whose fp32 probability underflows (a gap of 104 nats or more: the off-encoding property's underflowing "
                "row alone, in every batch of four rows or more)")
def _far_rows_wrong(failure: str) -> bool:
    """Finding V6's signature in test_large_offsets: an illegal memory access, or rows past
    2**31 elements (or the elements after them) that differ from the contiguous copy's."""
    return any(sign in failure for sign in ("illegal memory access", "rows 2**31 elements apart vs contiguous",
                                            "elements after each row"))


# A pin with a signature: a drawn case whose far rows give the kernel nothing to do (no bias,
# no bad word there) passes; the strict pin is tests/cover/test_vllm_findings.py's reproducer.
INT32_ROW_OFFSETS = Mark(
    "xfail", "finding V6: Model Runner V2's kernels address rows at token_idx * logits_stride in int32: rows past "
    "2**31 elements read and write out of bounds (an illegal memory access)", test=catalog.LARGE_OFFSETS,
    witness=_far_rows_wrong)
NAN_ROW = ("finding V5: MRV2 gumbel_sample returns id V (a masked padding lane of its last block) for an all-NaN "
           "row")
NAN_ROW_FINDINGS = (Mark("xfail", NAN_ROW, test=catalog.NON_FINITE_NEVER_DRAWN, device="cuda"),
              Mark("xfail", NAN_ROW, test=catalog.EDGE_VALUES,
                   witness=lambda failure: "ids out of [0," in failure or "ids outside [0," in failure))
SKIPPED_TOP_P = ("finding V7: apply_top_k_top_p_triton's standalone top-p exponentiates against an estimated "
                 "max (mean + 10 std of the first 8192 logits); a row whose max lies over ~88 from it (one dominant "
                 "logit in a short row; a low temperature) gets sum 0 or inf, NaN probabilities, and no masking")
INF_ROW_UNFILTERED = ("finding V10: a row holding +inf: V1's top-p keeps every entry (its softmax gives NaN), and the "
                      "Triton top-k keeps every entry; with V7 in the Triton kernel's edge-value cases")
# Pinned in test_edge_values by signature: a kept-set difference in the rows holding +inf is the
# finding; any other failure fails. In the Triton kernel V7 reaches rows of any kind (its domain,
# the distance of a row's max from an estimate over its first 8192 logits, is not in the
# failure), so there any kept-set difference is taken as the findings.
INF_ROW_PIN = Mark("xfail", INF_ROW_UNFILTERED, test=catalog.EDGE_VALUES, witness=kept_set_differs_in_rows_holding("+inf"))
ROWS_LEFT_UNMASKED = ("finding V12: apply_top_k_top_p_triton's standalone top-p leaves whole rows unmasked on a GPU: "
                      "1-3% of rows with one dominant token keep every entry at any p < 1 (the approximate fp32 "
                      "division makes its probability 1 + 2**-23, above the pivot search's 1.0 sentinel); which rows "
                      "depends on the layout (a padded row stride changes the rounding of the row's statistics)")
# V7 and V12 both return whole rows unmasked: against the oracle, a kept-set difference in rows
# the kernel left unchanged is either finding; any other difference fails the cell.
UNMASKED_ROWS = ("findings V7 and V12: apply_top_k_top_p_triton's standalone top-p returns whole rows unmasked "
                 "(V7: a row max far from its estimate gives NaN probabilities; V12: 1-3% of rows with one dominant "
                 "token, on a GPU)")
TRITON_TOP_P_FINDINGS = tuple(Mark("xfail", UNMASKED_ROWS, test=test, witness=rows_left_unmasked_only)
                              for test in (catalog.ORACLE_EQUIVALENCE, catalog.OFF_ENCODINGS)) + (
    Mark("xfail", INF_ROW_UNFILTERED, test=catalog.EDGE_VALUES,
         witness=lambda failure: "kept set differs from the oracle" in failure),
    Mark("xfail", ROWS_LEFT_UNMASKED, test=catalog.STRIDED_BITWISE, witness=rows_left_unmasked_only))
RANK_OF_NEG_INF = "finding V1: MRV2 _ranks_kernel counts its last block's masked lanes when the sampled logit is -inf"
UNBOUNDED_TILE = ("finding V8 (vllm#46746, fixed upstream after the vendored commit): _topk_log_softmax_kernel's "
                  "tile is next_pow2(n + 1) lanes, one compile per size of n, minutes at n = V = 262144")
STRIDED_COPY = ("finding V9: compute_topk_logprobs' torch.topk copies a strided logits view whole (a [B, V] buffer "
                "in the logits' dtype per call: padded vocabularies), against MRV2's intent of no [B, V] logprobs memory")
LOGPROBS_FINDINGS = (*(Mark("xfail", RANK_OF_NEG_INF, test=test, witness=ranks_differ_only_at_neg_inf)
                       for test in (catalog.ORACLE_EQUIVALENCE, catalog.EDGE_VALUES)),
                     Mark("xfail", STRIDED_COPY, test=catalog.MEMORY_BOUND, device="cuda"),
                     Mark("xfail", RANK_OF_NEG_INF, test=catalog.ALL_NEG_INF_ROW),
                     *(Mark("skip", UNBOUNDED_TILE, test=test)
                       for test in (catalog.WHOLE_VOCAB_AT_262144, catalog.WHOLE_VOCAB_MEMORY)))


def _backend(name: str, function: str, *, marks=(), triton=True, **fields) -> Backend:
    """A pack backend; `triton`: vLLM's code there is a Triton kernel (bf16 skipped on CPU).
    Its memory bound is MEMORY's, or O(B) state only (1 MiB)."""
    marks = VALIDATED_UPSTREAM + FAR_LISTS_OUTSIDE_PACK + ((INTERPRETER_BF16,) if triton else ()) + tuple(marks)
    memory = MEMORY.get(function, lambda logits, args: 2**20)
    return Backend(name, f"{MODULE}:{function}", marks=marks, error_messages=False, extra_memory=memory, **fields)


def _mrv2(name: str, function: str, *, marks=(), **fields) -> Backend:
    """A Model Runner V2 backend: a Triton kernel with finding V6's int32 row offsets."""
    return _backend(name, function, marks=(INT32_ROW_OFFSETS,) + tuple(marks), **fields)


def _top_k_only(case) -> bool:
    """top-k only (p off)"""
    return case.p is None and case.k is not None


def _outside_v4_and_v11(case) -> bool:
    """no allowed-id lists (finding V4) and no row at the end of its min_tokens (finding V11)

    V4: a race in _bias_kernel makes allowlists' results nondeterministic. V11 (vllm#46243):
    a row with stop ids, min_tokens > 0 and output_len == min_tokens keeps its stop ids masked,
    one token too long. Both pinned in tests/cover/test_vllm_findings.py."""
    no_allowed = case.allowed is None or not any(case.allowed)
    stops = () if case.min_tokens is None else expand_pool(case.min_tokens, case.logits.batch)
    return no_allowed and not any(ids and least > 0 and done == least for ids, least, done in stops)


LOGPROBS_TILE_LIMIT = 2**15


def _bounded_logprobs_tile(case) -> bool:
    """n below 32768 (-1 is n = V): finding V8 (vllm#46746) makes larger n compile for minutes
    (vLLM's tile is next_pow2(n + 1) lanes); pinned in tests/cover/test_vllm_findings.py"""
    return (case.logits.vocab if case.num_logprobs == -1 else case.num_logprobs or 0) < LOGPROBS_TILE_LIMIT


# vLLM's Triton top-k/top-p compiles per (vocabulary size, top-k on, top-p on): a deployment
# compiles for its model's one size. Drawn here: its block edges (one block is 8192 wide), a
# row shorter than a block, one past an odd number of blocks, and Qwen's real size.
V1_TRITON_VOCABS = (1, 17, 8192, 8193, 65537, 151936)
# The logits dtypes vLLM launches an op with (docs/call-sites.md): V1's sampler upcasts to fp32
# before its ops, and MRV2's sampler works on an fp32 copy (its logprobs read the model's logits).
FP32 = (torch.float32,)

PACK: tuple[tuple[str, Backend], ...] = (
    # Keeps every tie at the k-th, as V1's torch path does; its own duplicate handling means to
    # keep exactly k (finding V3, pinned in tests/cover/test_vllm_findings.py).
    ("top_k_top_p", _backend("vllm_v1_triton", "v1_triton_top_k_top_p", dtypes=FP32,
                             fixed_vocabs=V1_TRITON_VOCABS, marks=TRITON_TOP_P_FINDINGS,
                             semantics={"top_p_boundary": "pivot_search", **NAN_UNSPECIFIED})),
    ("top_k_top_p", _backend("vllm_v1_torch", "v1_torch_top_k_top_p", triton=False, dtypes=FP32,
                             marks=(Mark("xfail", P_ONE_MASKED, test=catalog.OFF_ENCODINGS, witness=rows_dropping_underflowed_only),
                                    INF_ROW_PIN),
                             semantics={**TORCH_PATH, **NAN_UNSPECIFIED})),
    ("top_k_top_p", _backend("vllm_v1_torch_top_k_only", "v1_torch_top_k_only", triton=False, dtypes=FP32, accepts=_top_k_only,
                             marks=(Mark("skip", EMPTY_TOP_K_ONLY, test=catalog.EMPTY_BATCH),),
                             semantics=NAN_UNSPECIFIED)),
    # batch_invariant=False: the record gives one seed per call, so a row is known by its index;
    # the adapter seeds row r's own generator from (seed, r), and a row moved is another request.
    ("top_k_top_p_sample", _backend("vllm_v1_torch_sample", "v1_torch_sample", triton=False, batch_invariant=False,
                                    semantics={**TORCH_PATH, **NAN_UNSPECIFIED, "random_stream": "own"})),
    ("penalties", _backend("vllm_v1_penalties", "v1_penalties", triton=False, dtypes=FP32, semantics={
        "division": "reciprocal", "frequency_rounding": "two", "compute_dtype": "logits_dtype"})),
    ("bad_words", _backend("vllm_v1_bad_words", "v1_bad_words", dtypes=FP32)),
    ("temperature", _mrv2("vllm_mrv2_temperature", "mrv2_temperature", dtypes=FP32, semantics={"division": "approximate"})),
    ("gumbel_sample", _mrv2("vllm_mrv2_gumbel", "mrv2_gumbel_sample", marks=NAN_ROW_FINDINGS,
                            semantics={"random_stream": "own"})),
    ("min_p", _mrv2("vllm_mrv2_min_p", "mrv2_min_p", dtypes=FP32, semantics=NAN_UNSPECIFIED)),
    ("logit_bias", _mrv2("vllm_mrv2_logit_bias", "mrv2_logit_bias", dtypes=FP32, accepts=_outside_v4_and_v11)),
    ("penalties", _mrv2("vllm_mrv2_penalties", "mrv2_penalties", dtypes=FP32,
                        semantics={"division": "approximate", "frequency_rounding": "two"})),
    ("bad_words", _mrv2("vllm_mrv2_bad_words", "mrv2_bad_words", dtypes=FP32)),
    ("logprobs", _mrv2("vllm_mrv2_logprobs", "mrv2_logprobs", marks=LOGPROBS_FINDINGS,
                       accepts=_bounded_logprobs_tile, semantics={"layout_invariance": "summation_order"})),
)


def pack() -> list[tuple[str, Backend]]:
    """The pack's (record, backend) pairs (entry point `samplecheck.packs: vllm`); raises
    PackUnavailable when no vLLM source is there."""
    reason = src.unavailable()
    if reason is not None:
        raise PackUnavailable(reason)
    return list(PACK)
