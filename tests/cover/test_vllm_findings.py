"""Minimal regression cases of the defects the vLLM pack found in vLLM's kernels
(docs/findings-vllm.md, V1 to V12; V6, int32 row offsets, also by test_large_offsets' pin with a signature),
each a strict xfail that turns red when vLLM fixes it.
Each states our contract on a hand-sized input and calls the pack's adapter; skipped
without a vLLM source (samplecheck.backends.vllm_source)."""

import dataclasses

import pytest
import torch

from samplecheck.backends import vllm, vllm_source
from samplecheck.harness.runner import prepare, reference, run
from samplecheck.infos.logit_bias import BIG_ALLOWLIST
from samplecheck.inputs.recipes import LogitsRecipe, materialize
from samplecheck.judging.memory import peak_extra_bytes
from samplecheck.registry.matrix import RECORDS, Combo

pytestmark = [pytest.mark.interpreter,
              pytest.mark.skipif(vllm_source.unavailable() is not None,
                                 reason=str(vllm_source.unavailable()))]
NEG_INF = float("-inf")


@pytest.mark.xfail(strict=True, reason="finding V1: MRV2 _ranks_kernel counts the masked lanes of its last "
                                       "block when the sampled token's logit is -inf")
def test_v1_rank_of_a_neg_inf_sampled_token(device):
    """rank = #{x >= x_sampled} <= V: here 3 in both rows (vLLM: 8192, its BLOCK_SIZE)."""
    logits = torch.tensor([[0.0, NEG_INF, 1.0], [NEG_INF, NEG_INF, NEG_INF]], device=device)
    out = vllm.mrv2_logprobs(logits, sampled=torch.tensor([1, 0], device=device), num_logprobs=0)
    assert out.ranks.tolist() == [3, 3]


@pytest.mark.xfail(strict=True, reason="finding V2: V1 apply_top_k_top_p_pytorch masks tokens whose fp32 "
                                       "probability underflows in rows with p = 1 (top-p off) when a batch mate "
                                       "uses top-p")
def test_v2_top_p_off_row_is_unchanged_beside_a_top_p_row(device):
    """Row 0 has p = 1 (off): it must come back bitwise unchanged, -200 included."""
    logits = torch.tensor([[0.0, 1.0, -200.0], [0.0, 1.0, 2.0]], device=device)
    out = vllm.v1_torch_top_k_top_p(logits.clone(), None, torch.tensor([1.0, 0.5], device=device))
    assert torch.equal(out[0], logits[0])


@pytest.mark.xfail(strict=True, reason="finding V3: apply_top_k_top_p_triton's final pass trims the ties at the "
                                       "k-th against their total count, not the count to keep: every tie is kept")
def test_v3_triton_top_k_keeps_exactly_k_of_a_tied_row(device):
    """Its own duplicate handling computes how many ties to keep (k here); 8 tied values, k = 2."""
    logits = torch.zeros(1, 8, device=device)
    out = vllm.v1_triton_top_k_top_p(logits, torch.tensor([2], device=device), None)
    assert int((out > NEG_INF).sum()) == 2


@pytest.mark.gpu
@pytest.mark.xfail(strict=True, reason="finding V6: Model Runner V2's kernels address rows at token_idx * "
                                       "logits_stride in int32: rows past 2**31 elements are out of bounds")
def test_v6_temperature_of_a_row_past_2_31_elements(device):
    """Three bf16 rows of 1024 logits, 2**30 + 1024 elements apart (the last starts past
    element 2**31, the stride fits int32), temperature 2 on each: every row is the contiguous
    copy's, bitwise (vLLM: an illegal memory access, or the last row untouched)."""
    stride, vocab = 2**30 + 1024, 1024
    buffer = torch.zeros(2 * stride + vocab, dtype=torch.bfloat16, device=device)
    far = buffer.as_strided((3, vocab), (stride, 1))
    values = torch.randn(3, vocab, generator=torch.Generator().manual_seed(6)).to(device, torch.bfloat16)
    far.copy_(values)
    temperature = torch.full((3,), 2.0, device=device)
    expected = vllm.mrv2_temperature(values.clone(), temperature)
    output = vllm.mrv2_temperature(far, temperature)
    torch.cuda.synchronize()
    assert torch.equal(output, expected)


@pytest.mark.gpu
@pytest.mark.xfail(strict=True, reason="finding V4: MRV2 _bias_kernel fills the row with -inf and restores the "
                                       "allowed ids without a barrier between the two: some allowed ids stay -inf")
def test_v4_allowed_ids_keep_their_logits(device):
    """The record's vllm#46245 regression case (a 1024-id allowlist beside an unrestricted row,
    two biased ids) at batch 1024, 512 restricted rows whose programs share every SM, judged by
    the record's oracle in each of 100 calls. A race, so a probabilistic pin: at batch 2 it
    showed in H200 runs 10 and 21 and not in runs 12 and 22; every restricted row is one more
    chance for a restore to land before its fill."""
    backend = next(b for _, b in vllm.PACK if b.name == "vllm_mrv2_logit_bias")
    combo = Combo(RECORDS["logit_bias"], backend, torch.float32, "contig")
    case = dataclasses.replace(BIG_ALLOWLIST, logits=dataclasses.replace(BIG_ALLOWLIST.logits, batch=1024))
    placed, args = prepare(combo, case, device)
    original = placed.view.clone()
    expected = reference(combo, original, args)
    failed = []
    for call in range(100):
        try:
            combo.info.check(original, run(combo, original.clone(), args), expected, combo.id)
        except AssertionError:
            failed.append(call)
    assert not failed, f"allowed ids lost in {len(failed)} of 100 calls (first: call {failed[0]})"


@pytest.mark.xfail(strict=True, reason="finding V11 (vllm#46243): MRV2 _bias_kernel masks the stop ids while the "
                                       "last token's position is below prompt_len + min_tokens: one token too long")
def test_v11_stop_ids_are_released_once_min_tokens_are_out(device):
    """min_tokens 2 with 2 tokens out: stop id 1 is free again; row 1 (1 token out) keeps it
    masked. Called as vLLM's sampler calls it (pos: the position of the last token)."""
    logits = torch.zeros(2, 4, device=device)
    ids = dict(dtype=torch.int64, device=device)
    out = vllm.mrv2_logit_bias(logits, stop_token_ids=torch.tensor([[1], [1]], **ids),
                               min_tokens=torch.tensor([2, 2], **ids), output_len=torch.tensor([2, 1], **ids))
    assert out[:, 1].tolist() == [0.0, NEG_INF]


@pytest.mark.gpu
@pytest.mark.xfail(strict=True, reason="finding V5: MRV2 gumbel_sample returns id V (a masked lane of its last "
                                       "block) for an all-NaN row")
def test_v5_all_nan_row_samples_an_id_in_the_vocabulary(device):
    """A row of 200 NaNs: whichever id is returned, it is in [0, V)."""
    logits = torch.full((1, 200), float("nan"), device=device)
    ids = vllm.mrv2_gumbel_sample(logits, seeds=torch.tensor([1], device=device),
                                  positions=torch.tensor([11], device=device))
    assert 0 <= int(ids[0]) < 200


@pytest.mark.xfail(strict=True, reason=vllm.SKIPPED_TOP_P)
def test_v7_triton_top_p_alone_masks_a_row_with_one_dominant_logit(device):
    """One logit 100 above sixteen zeros, p = 0.5: the nucleus is that id alone (vLLM keeps all 17:
    its max estimate, mean + 10 std = 241, puts every exp below fp32's range)."""
    logits = torch.zeros(1, 17, device=device)
    logits[0, 3] = 100.0
    out = vllm.v1_triton_top_k_top_p(logits, None, torch.tensor([0.5], device=device))
    assert (out[0] > NEG_INF).nonzero().flatten().tolist() == [3]


@pytest.mark.xfail(strict=True, reason=vllm.SKIPPED_TOP_P)
def test_v7_triton_top_p_alone_masks_a_low_temperature_row(device):
    """A row of 8192 standard normal logits with one at 15, divided by T = 0.05: that token holds
    all the mass, so p = 0.9 keeps it alone (vLLM keeps all 8192: exp(300 - ~200) overflows)."""
    logits = torch.randn(1, 8192, generator=torch.Generator().manual_seed(0)).to(device)
    logits[0, 5] = 15.0
    out = vllm.v1_triton_top_k_top_p(logits / 0.05, None, torch.tensor([0.9], device=device))
    assert (out[0] > NEG_INF).nonzero().flatten().tolist() == [5]


@pytest.mark.gpu
@pytest.mark.xfail(strict=True, reason=vllm.ROWS_LEFT_UNMASKED)
def test_v12_triton_top_p_alone_masks_a_peaked_row(device):
    """Row 12 of 512 peaked rows (8193 normal logits of std 3, one 36 above them: probability 1 in
    fp32) drawn on the CPU, p = 0.5: the nucleus is the dominant id alone (vLLM keeps all 8193 on
    an H100; the interpreter masks it)."""
    logits = materialize(LogitsRecipe(512, 8193, "peaked", 3.0, seed=0), torch.float32, "cpu")[12:13].to(device)
    out = vllm.v1_triton_top_k_top_p(logits.clone(), None, torch.tensor([0.5], device=device))
    assert (out[0] > NEG_INF).nonzero().flatten().tolist() == [int(logits[0].argmax())]


@pytest.mark.cpu_subject
@pytest.mark.xfail(strict=True, reason=vllm.ROWS_LEFT_UNMASKED)
def test_v12_triton_top_p_alone_masks_peaked_rows_under_gpu_math():
    """V12 on the CPU: the first 16 of those rows under the interpreter with fp32 `/` and exp
    modelled as a GPU computes them (samplecheck.harness.gpu_math), p = 0.5: each keeps its dominant id alone
    (vLLM keeps all 8193 of rows 1, 9 and 15; with the interpreter's exact division, none)."""
    from samplecheck.harness.gpu_math import gpu_fp32_math

    logits = materialize(LogitsRecipe(512, 8193, "peaked", 3.0, seed=0), torch.float32, "cpu")[:16]
    with gpu_fp32_math():
        out = vllm.v1_triton_top_k_top_p(logits.clone(), None, torch.full((16,), 0.5))
    kept = out > NEG_INF
    assert kept.sum(dim=-1).tolist() == [1] * 16 and bool(kept.gather(1, logits.argmax(-1, keepdim=True)).all())


@pytest.mark.gpu
@pytest.mark.xfail(strict=True, reason=vllm.UNBOUNDED_TILE)
def test_v8_whole_vocab_logprobs_compile_once_for_every_vocab(device):
    """num_logprobs = -1 at V = 1000, 3000 and 9000 (all 8 mod 16, so Triton specialises none of
    their sizes or strides differently): a tile bounded whatever n is serves the three with the
    kernel the first call compiled (vLLM compiles tiles of 1024, 4096 and 16384 lanes)."""
    kernel = vllm_source.module("mrv2_logprob")._topk_log_softmax_kernel

    def compiled() -> int:
        return sum(len(caches[0]) for caches in kernel.device_caches.values())

    counts = []
    for vocab in (1000, 3000, 9000):
        logits = torch.randn(2, vocab, device=device)
        vllm.mrv2_logprobs(logits, sampled=torch.tensor([0, vocab - 1], device=device), num_logprobs=-1)
        counts.append(compiled())
    assert counts[-1] == counts[0], f"compiled kernels after each vocab: {counts}"


@pytest.mark.gpu
@pytest.mark.xfail(strict=True, reason=vllm.STRIDED_COPY)
def test_v9_top_logprobs_of_a_padded_vocab_copy_no_logits(device):
    """opt-125m's logits as vLLM slices them: [8, 50272] bf16 of a [8, 50304] buffer; the top 5
    logprobs need O(B n) memory, less than one [B, V] copy of the logits (vLLM copies them)."""
    logits = torch.randn(8, 50304, device=device).to(torch.bfloat16)[:, :50272]
    sampled = torch.tensor([0, 1, 2, 3, 4, 5, 6, 50271], device=device)
    vllm.mrv2_logprobs(logits, sampled=sampled, num_logprobs=5)  # compile outside the measurement
    _, extra = peak_extra_bytes(lambda: vllm.mrv2_logprobs(logits, sampled=sampled, num_logprobs=5))
    assert extra < logits.numel() * logits.element_size(), f"{extra} bytes beyond the inputs"
