"""The vLLM pack's adapters call vLLM as vLLM's own call sites do (docs/call-sites.md).

Each test replaces `samplecheck.backends.vllm_source.module` with fake modules whose functions
record what they are given, calls one adapter of `samplecheck.backends.vllm` on a small
hand-made CPU case, and checks the recorded arguments against the convention of the vLLM call
site named in docs/call-sites.md: the argument order, the encodings (top-k off = V in int32,
pad id V, -1 placeholders, flattened bad words and their offsets, min_len = prompt + min_tokens),
the dtypes, shapes and contiguity, the per-request state read through `expanded_idx_mapping`
(state[mapping[row]] is the row's value; the other slots hold other values), the positions,
the host-side skips (no call, or None for k / p, when no row of the batch uses the op) and the
logits dtypes each call site launches the kernel with. No vLLM is needed: the kernels are never
run. Each difference docs/call-sites.md records under "Differences found" has its test here.
"""

import types

import pytest
import torch

import samplecheck.infos  # noqa: F401  (registers the records whose dtypes the pack inherits)
from samplecheck.backends import vllm, vllm_source
from samplecheck.registry.matrix import RECORDS

pytestmark = pytest.mark.interpreter
V = 8  # the vocabulary of the hand-made cases
F32, I32, I64 = torch.float32, torch.int32, torch.int64


class Recorder:
    """A fake vLLM module: every function records (args, kwargs) and returns `returns(name, args)`."""

    def __init__(self, returns):
        self.calls: list[tuple[str, tuple, dict]] = []
        self._returns = returns

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)

        def function(*args, **kwargs):
            self.calls.append((name, args, kwargs))
            return self._returns(name, args)
        return function

    def only(self, name):
        """The arguments of the one call to `name`."""
        found = [(args, kwargs) for called, args, kwargs in self.calls if called == name]
        assert len(found) == 1, f"{name} called {len(found)} times: {[c[0] for c in self.calls]}"
        return found[0]


def _returns(name, args):
    if name in ("random_sample", "gumbel_sample"):
        return torch.zeros(args[0].size(0), dtype=I64)
    if name == "compute_topk_logprobs":
        logits, n, sampled = args[:3]
        ids = torch.arange(n + 1).repeat(logits.size(0), 1)
        return types.SimpleNamespace(logprob_token_ids=ids, logprobs=torch.zeros(ids.shape),
                                     selected_token_ranks=torch.ones(logits.size(0), dtype=I64))
    return args[0] if args else None  # the apply_* functions return (or modify) the logits


@pytest.fixture
def engine(monkeypatch):
    """The fake vLLM: one Recorder for every module the pack imports."""
    fake = Recorder(_returns)
    monkeypatch.setattr(vllm_source, "module", lambda name: fake)
    return fake


def logits(batch=3, dtype=F32):
    return torch.randn(batch, V, generator=torch.Generator().manual_seed(1)).to(dtype)


def _state(state, mapping, values, fill_differs=True):
    """state[mapping[i]] == values[i] (MRV2's per-request state read through expanded_idx_mapping),
    with more slots than rows and the other slots holding other values (a row-indexed read is caught)."""
    assert mapping.dtype == I32 and mapping.dim() == 1, mapping
    assert state.size(0) > values.size(0), "as many request slots as rows: row-indexing would go unseen"
    assert sorted(mapping.tolist()) != list(range(values.size(0))), "the identity mapping hides row-indexing"
    assert torch.equal(state[mapping.long()], values.to(state.dtype)), (state, mapping, values)


# --- V1: top-k / top-p (vllm/v1/sample/sampler.py Sampler.sample -> TopKTopPSampler) -----------

K = torch.tensor([0, 2, V + 3], dtype=I64)        # off (0), binding (2), off (>= V)
P = torch.tensor([1.0, 0.5, 0.9], dtype=F32)
TOP_K_TOP_P = {  # adapter -> (vLLM function, does the call take p)
    "v1_triton_top_k_top_p": ("apply_top_k_top_p_triton", True),
    "v1_torch_top_k_top_p": ("apply_top_k_top_p_pytorch", True),
    "v1_torch_top_k_only": ("apply_top_k_only", False),
}


def _call_top_k_top_p(adapter, x, k, p):
    if adapter == "v1_torch_sample":
        return vllm.v1_torch_sample(x, k=k, p=p, seed=7)
    return getattr(vllm, adapter)(x, k, p)


def _k_p(engine, adapter):
    if adapter == "v1_torch_sample":
        args, _ = engine.only("apply_top_k_top_p_pytorch")
        return args[0], args[1], args[2]
    function, takes_p = TOP_K_TOP_P[adapter]
    args, _ = engine.only(function)
    return args[0], args[1], (args[2] if takes_p else None)


@pytest.mark.parametrize("adapter", [*TOP_K_TOP_P, "v1_torch_sample"])
def test_v1_top_k_is_int32_with_v_for_off_and_p_is_float32(engine, adapter):
    """InputBatch stores top_k as int32, V where the request has none (k <= 0 or k >= V), top_p as
    float32; SamplingMetadata passes the [num_reqs] slices, one entry per row."""
    x = logits()
    _call_top_k_top_p(adapter, x, K, None if adapter == "v1_torch_top_k_only" else P)
    _, k, p = _k_p(engine, adapter)
    assert k.dtype == I32 and k.shape == (3,) and k.is_contiguous()
    assert k.tolist() == [V, 2, V]
    if adapter != "v1_torch_top_k_only":
        assert p.dtype == F32 and torch.equal(p, P)


@pytest.mark.parametrize("adapter", ["v1_triton_top_k_top_p", "v1_torch_top_k_top_p", "v1_torch_sample"])
def test_v1_unused_filters_are_none(engine, adapter):
    """The record's k=None / p=None reach vLLM as None (SamplingMetadata's no_top_k / no_top_p)."""
    _call_top_k_top_p(adapter, logits(), None, P)
    assert _k_p(engine, adapter)[1] is None
    engine.calls.clear()
    _call_top_k_top_p(adapter, logits(), K, None)
    assert _k_p(engine, adapter)[2] is None


@pytest.mark.parametrize("adapter", ["v1_triton_top_k_top_p", "v1_torch_top_k_top_p", "v1_torch_sample"])
@pytest.mark.parametrize("which", ["k", "p"])
def test_v1_a_filter_no_row_uses_is_none(engine, adapter, which):
    """No row uses top-k (every k off) -> vLLM passes k=None; no row has p < 1 -> p=None."""
    k = torch.tensor([0, V, -1]) if which == "k" else K
    p = torch.ones(3) if which == "p" else P
    _call_top_k_top_p(adapter, logits(), k, p)
    _, got_k, got_p = _k_p(engine, adapter)
    assert (got_k if which == "k" else got_p) is None


def test_v1_top_k_only_is_not_called_when_no_row_uses_top_k(engine):
    """apply_top_k_top_p_pytorch reaches apply_top_k_only only with k not None (some row binding)."""
    vllm.v1_torch_top_k_only(logits(), torch.tensor([0, V, -1]), None)
    assert engine.calls == []


def test_v1_sample_upcasts_a_copy_to_fp32_and_seeds_one_generator_per_row(engine):
    """Sampler.forward converts the logits to fp32 before any op; seeded requests bring one
    torch.Generator each in sampling_metadata.generators {row: generator}; random_sample gets the
    fp32 softmax."""
    x = logits(dtype=torch.bfloat16)
    vllm.v1_torch_sample(x, k=K, p=P, seed=7)
    (filtered, _, _), _ = engine.only("apply_top_k_top_p_pytorch")
    assert filtered.dtype == F32 and filtered.data_ptr() != x.data_ptr()
    (probs, generators), _ = engine.only("random_sample")
    assert probs.dtype == F32 and torch.allclose(probs.sum(-1), torch.ones(3))
    assert sorted(generators) == [0, 1, 2] and all(isinstance(g, torch.Generator) for g in generators.values())
    assert len({g.initial_seed() for g in generators.values()}) == 3


# --- V1: penalties and bad words (Sampler.apply_penalties / apply_logits_processors) ----------

def test_v1_penalties_argument_order_pad_ids_and_dtypes(engine):
    """apply_all_penalties(logits, prompt_token_ids, presence, frequency, repetition, output lists):
    the prompt int64 [B, P] padded with V (InputBatch._make_prompt_token_ids_tensor), the penalties
    float32 [B], the outputs Python lists (-1, vLLM's async placeholder, it maps to V itself)."""
    x = logits(2)
    prompt = torch.tensor([[1, 2, -1], [3, -1, -1]], dtype=I32)
    output = torch.tensor([[4, -1], [5, 6]], dtype=I64)
    rep, freq, pres = (torch.tensor(v, dtype=F32) for v in ([1.1, 1.2], [0.3, 0.4], [0.5, 0.6]))
    vllm.v1_penalties(x, prompt_token_ids=prompt, output_token_ids=output, repetition_penalty=rep,
                      frequency_penalty=freq, presence_penalty=pres)
    (got_x, got_prompt, got_pres, got_freq, got_rep, got_output), kwargs = engine.only("apply_all_penalties")
    assert got_x is x and not kwargs
    assert got_prompt.dtype == I64 and got_prompt.tolist() == [[1, 2, V], [3, V, V]]
    assert got_pres is pres and got_freq is freq and got_rep is rep
    assert isinstance(got_output, list) and all(isinstance(t, int) for row in got_output for t in row)
    assert [[t for t in row if t != -1] for row in got_output] == [[4], [5, 6]]


def test_v1_penalties_not_called_when_no_row_uses_a_penalty(engine):
    """SamplingMetadata.no_penalties (every row 1, 0, 0) -> Sampler.apply_penalties returns early."""
    vllm.v1_penalties(logits(2), prompt_token_ids=torch.tensor([[1], [2]]), output_token_ids=torch.tensor([[3], [4]]),
                      repetition_penalty=torch.ones(2), frequency_penalty=torch.zeros(2),
                      presence_penalty=torch.zeros(2))
    assert engine.calls == []


def test_v1_bad_words_rows_with_words_and_the_output_as_past(engine):
    """apply_bad_words(logits, {row: [word, ...]} for the rows with bad words, output token lists)."""
    x = logits(3)
    words = torch.tensor([[[1, 2], [3, -1]], [[-1, -1], [-1, -1]], [[4, -1], [-1, -1]]])
    output = torch.tensor([[1, -1], [2, 3], [-1, -1]])
    assert vllm.v1_bad_words(x, bad_words=words, output_token_ids=output) is x
    (got_x, got_words, got_past), _ = engine.only("apply_bad_words")
    assert got_x is x
    assert got_words == {0: [[1, 2], [3]], 2: [[4]]}
    assert got_past == [[1], [2, 3], []]


def test_v1_bad_words_not_called_when_no_row_has_words(engine):
    """Sampler.apply_logits_processors calls apply_bad_words only if bad_words_token_ids is non-empty."""
    vllm.v1_bad_words(logits(2), bad_words=torch.full((2, 1, 1), -1), output_token_ids=torch.tensor([[1], [2]]))
    assert engine.calls == []


# --- MRV2 (vllm/v1/worker/gpu/sample/sampler.py and its state classes) ------------------------

@pytest.mark.parametrize("adapter, function, values, all_off", [
    ("mrv2_temperature", "apply_temperature", [0.5, 2.0, 0.0], [1.0, 0.0, 1.0]),
    ("mrv2_min_p", "apply_min_p", [0.1, 0.0, 0.3], [0.0, 0.0, 0.0])])
def test_mrv2_per_row_scalar_state_per_slot(engine, adapter, function, values, all_off):
    """SamplingStates.apply_temperature / apply_min_p: f(logits, expanded_idx_mapping int32 [B],
    state.gpu float32 [max_num_reqs]); not launched when no row needs it (temperature all 0 or 1,
    min-p all 0)."""
    x, v = logits(), torch.tensor(values)
    getattr(vllm, adapter)(x, v)
    (got_x, mapping, state), _ = engine.only(function)
    assert got_x is x and state.dtype == F32
    _state(state, mapping, v)
    engine.calls.clear()
    getattr(vllm, adapter)(logits(), torch.tensor(all_off))
    assert engine.calls == []


def test_mrv2_gumbel_sample_state_positions_and_flags(engine):
    """gumbel_sample(logits, expanded_idx_mapping, temperature [R] fp32, seeds [R] int64, pos [B]
    int64, apply_temperature=True): the speculators' draft call (eagle `_sample_draft`), which
    scales by temperature itself; use_fp64 and the processed-logits output left at their defaults."""
    x = logits(dtype=torch.bfloat16)
    seeds, pos, t = torch.tensor([11, -5, 2**40]), torch.tensor([3, 0, 2**33]), torch.tensor([0.7, 0.0, 1.0])
    vllm.mrv2_gumbel_sample(x, seeds=seeds, positions=pos, temperature=t)
    (got_x, mapping, temp, seed, got_pos), kwargs = engine.only("gumbel_sample")
    assert got_x is x and kwargs == {"apply_temperature": True}
    assert temp.dtype == F32 and seed.dtype == I64 and got_pos.dtype == I64
    _state(temp, mapping, t)
    _state(seed, mapping, seeds)
    assert got_pos is pos  # per row (token), not per request slot
    engine.calls.clear()
    vllm.mrv2_gumbel_sample(x, seeds=seeds, positions=pos)
    (_, mapping, temp, _, _), _ = engine.only("gumbel_sample")
    _state(temp, mapping, torch.ones(3))


MIN_TOKENS = {"stop_token_ids": torch.tensor([[1, 2], [3, -1], [4, -1]]), "min_tokens": torch.tensor([2, 0, 3]),
              "output_len": torch.tensor([1, 4, 3])}


def test_mrv2_logit_bias_state_as_add_request_builds_it(engine):
    """LogitBiasState.add_request: int32 counts and id lists per slot, float32 biases, min_len =
    prompt_len + min_tokens, stop ids stored only where min_tokens > 0."""
    x = logits()
    vllm.mrv2_logit_bias(x, allowed_token_ids=torch.tensor([[1, 5], [-1, -1], [7, -1]]),
                         logit_bias_ids=torch.tensor([[2, -1], [3, 4], [-1, -1]]),
                         logit_bias_values=torch.tensor([[0.5, 0.0], [-1.0, 2.0], [0.0, 0.0]]), **MIN_TOKENS)
    (got_x, mapping, pos, n_allowed, allowed, n_bias, bias_ids, bias, min_lens, n_stop, stop), kw = \
        engine.only("apply_logit_bias")
    assert got_x is x and not kw
    for t in (n_allowed, allowed, n_bias, bias_ids, min_lens, n_stop, stop):
        assert t.dtype == I32
    assert bias.dtype == F32 and pos.dtype == I64 and pos.shape == (3,)
    _state(n_allowed, mapping, torch.tensor([2, 0, 1]))
    _state(allowed[:, :2], mapping, torch.tensor([[1, 5], [0, 0], [7, 0]]))
    _state(n_bias, mapping, torch.tensor([1, 2, 0]))
    _state(bias_ids[:, :2], mapping, torch.tensor([[2, 0], [3, 4], [0, 0]]))
    _state(bias[:, :2], mapping, torch.tensor([[0.5, 0.0], [-1.0, 2.0], [0.0, 0.0]]))
    _state(min_lens, mapping, vllm.PROMPT_LEN + MIN_TOKENS["min_tokens"])
    _state(n_stop, mapping, torch.tensor([2, 0, 1]))  # row 1: min_tokens 0, no stop ids stored
    _state(stop[:, :1], mapping, torch.tensor([[1], [3], [4]]))


def test_mrv2_logit_bias_pos_is_the_last_tokens_position(engine):
    """Sampler.__call__: pos = input_batch.positions[logits_indices], the position of the last token
    in the sequence (prompt_len + output_len - 1), compared by the kernel with min_len."""
    vllm.mrv2_logit_bias(logits(), **MIN_TOKENS)
    (_, _, pos, *_), _ = engine.only("apply_logit_bias")
    assert pos.tolist() == (vllm.PROMPT_LEN + MIN_TOKENS["output_len"] - 1).tolist()


def test_mrv2_logit_bias_not_launched_when_no_request_uses_it(engine):
    """LogitBiasState.apply_logit_bias returns unless use_logit_bias is set for a request."""
    vllm.mrv2_logit_bias(logits(), stop_token_ids=torch.tensor([[1], [2], [3]]), min_tokens=torch.zeros(3, dtype=I64),
                         output_len=torch.zeros(3, dtype=I64))
    assert engine.calls == []


PENALTIES = {"prompt_token_ids": torch.tensor([[1, 1, -1], [2, V, -1], [-1, -1, -1]]),
             "output_token_ids": torch.tensor([[3, -1], [4, 4], [5, -1]]),
             "repetition_penalty": torch.tensor([1.5, 1.0, 2.0]), "frequency_penalty": torch.tensor([0.0, 0.2, 0.3]),
             "presence_penalty": torch.tensor([0.1, 0.0, 0.4])}


def test_mrv2_penalties_bincount_then_apply_as_the_state_does(engine):
    """PenaltiesState: bincount(mapping, all_token_ids [R, L] int32 (prompt then output),
    prompt_len, prefill_len, prompt_bin_mask [R, cdiv(V, 32)] int32, output_bin_counts [R, V] int32,
    max_prefill_len); then apply_penalties(logits, mapping, input_ids, expanded_local_pos, rep, freq,
    pres [R] float32, the same mask and counts), with no draft tokens (local positions 0)."""
    x = logits()
    vllm.mrv2_penalties(x, **PENALTIES)
    (mapping, history, prompt_len, prefill_len, mask, counts, max_len), _ = engine.only("bincount")
    (got_x, mapping2, input_ids, local_pos, rep, freq, pres, mask2, counts2), kw = engine.only("apply_penalties")
    assert got_x is x and not kw and torch.equal(mapping, mapping2)
    assert mask2 is mask and counts2 is counts
    assert mask.dtype == counts.dtype == I32 and mask.shape[1] == (V + 31) // 32 and counts.shape[1] == V
    assert mask.size(0) == counts.size(0) == history.size(0) > 3
    for t in (history, prompt_len, prefill_len, input_ids, local_pos):
        assert t.dtype == I32
    _state(prompt_len, mapping, torch.tensor([2, 1, 0]))  # only real ids: -1 and V left out
    _state(prefill_len, mapping, torch.tensor([3, 3, 1]))
    _state(history[:, :3], mapping, torch.tensor([[1, 1, 3], [2, 4, 4], [5, 0, 0]]))
    assert max_len == 3 and local_pos.tolist() == [0, 0, 0] and input_ids.shape == (3,)
    for state, values in ((rep, "repetition_penalty"), (freq, "frequency_penalty"), (pres, "presence_penalty")):
        assert state.dtype == F32
        _state(state, mapping, PENALTIES[values])


def test_mrv2_penalties_not_launched_when_no_request_uses_one(engine):
    """PenaltiesState.apply_penalties returns unless use_penalty is set for a request (and bincount
    runs only for such requests)."""
    vllm.mrv2_penalties(logits(), **{**PENALTIES, "repetition_penalty": torch.ones(3),
                                     "frequency_penalty": torch.zeros(3), "presence_penalty": torch.zeros(3)})
    assert engine.calls == []


def test_mrv2_bad_words_flattened_with_offsets_and_the_history(engine):
    """BadWordsState.add_request: the words flattened per request (int32), offsets [0, end of each
    word...], the count; req_states' all_token_ids (prompt then output), prompt_len, total_len;
    input_ids and expanded_local_pos per row (no drafts: 0); max_num_bad_words over the batch."""
    x = logits()
    words = torch.tensor([[[1, 2], [3, -1]], [[-1, -1], [-1, -1]], [[4, 5], [-1, -1]]])
    output = torch.tensor([[6, -1], [7, 1], [-1, -1]])
    assert vllm.mrv2_bad_words(x, bad_words=words, output_token_ids=output) is x
    (got_x, mapping, flat, offsets, count, history, prompt_len, total_len, input_ids, local_pos, n), kw = \
        engine.only("apply_bad_words")
    assert got_x is x and not kw and n == 2
    for t in (flat, offsets, count, history, prompt_len, total_len, input_ids, local_pos):
        assert t.dtype == I32
    _state(count, mapping, torch.tensor([2, 0, 1]))
    _state(flat[:, :3], mapping, torch.tensor([[1, 2, 3], [0, 0, 0], [4, 5, 0]]))
    _state(offsets[:, :3], mapping, torch.tensor([[0, 2, 3], [0, 0, 0], [0, 2, 0]]))
    prompt = [t % V for t in vllm.BAD_WORDS_PROMPT]
    _state(prompt_len, mapping, torch.full((3,), len(prompt)))
    _state(total_len, mapping, torch.tensor([len(prompt) + 1, len(prompt) + 2, len(prompt)]))
    _state(history[:, :len(prompt) + 2], mapping, torch.tensor([prompt + [6, 0], prompt + [7, 1], prompt + [0, 0]]))
    assert local_pos.tolist() == [0, 0, 0] and input_ids.shape == (3,)


def test_mrv2_bad_words_not_launched_when_no_request_has_words(engine):
    """BadWordsState.apply_bad_words returns when max_num_bad_words over the batch is 0."""
    vllm.mrv2_bad_words(logits(2), bad_words=torch.full((2, 1, 1), -1), output_token_ids=torch.tensor([[1], [2]]))
    assert engine.calls == []


@pytest.mark.parametrize("asked, passed", [(0, 0), (2, 2), (-1, V)])
def test_mrv2_logprobs_count_and_sampled_ids(engine, asked, passed):
    """Sampler.__call__: compute_topk_logprobs(logits, max_num_logprobs, sampled) with -1 stored as
    vocab_size (SamplingStates.add_request), the sampled ids int64 [B]; None (NO_LOGPROBS): no call."""
    x, sampled = logits(dtype=torch.bfloat16), torch.tensor([1, 0, 7])
    vllm.mrv2_logprobs(x, sampled=sampled, num_logprobs=asked)
    (got_x, n, got_sampled), kw = engine.only("compute_topk_logprobs")
    assert got_x is x and n == passed and got_sampled is sampled and not kw
    engine.calls.clear()
    assert vllm.mrv2_logprobs(x, sampled=sampled, num_logprobs=None) is None and engine.calls == []


# --- the logits dtypes each call site launches with (docs/call-sites.md, "Dtypes") -----------
ALL = {torch.float32, torch.float16, torch.bfloat16}
ENGINE_DTYPES = {  # backend -> the logits dtypes vLLM launches that function with at the vendored commit
    "vllm_v1_triton": {F32}, "vllm_v1_torch": {F32}, "vllm_v1_torch_top_k_only": {F32},
    "vllm_v1_torch_sample": ALL,  # the adapter upcasts as Sampler.forward does: any model dtype
    "vllm_v1_penalties": {F32}, "vllm_v1_bad_words": {F32},
    "vllm_mrv2_temperature": {F32}, "vllm_mrv2_min_p": {F32}, "vllm_mrv2_logit_bias": {F32},
    "vllm_mrv2_penalties": {F32}, "vllm_mrv2_bad_words": {F32},
    "vllm_mrv2_gumbel": ALL,  # fp32 in the Sampler, the draft model's dtype in the speculators
    "vllm_mrv2_logprobs": ALL,  # raw logprobs: the model's logits as they come
}
BACKENDS = {backend.name: (record, backend) for record, backend in vllm.PACK}

def test_every_backend_of_the_pack_is_audited():
    assert set(BACKENDS) == set(ENGINE_DTYPES)


@pytest.mark.parametrize("name", list(ENGINE_DTYPES))
def test_backend_dtypes_are_the_engines(name):
    """The backend is judged at the dtypes vLLM launches the function with: all of them (else a
    launch goes untested) and no other (else a finding may be one vLLM cannot show)."""
    record, backend = BACKENDS[name]
    judged = set(backend.dtypes if backend.dtypes is not None else RECORDS[record].dtypes)
    assert judged == ENGINE_DTYPES[name] & set(RECORDS[record].dtypes), (judged, ENGINE_DTYPES[name])
