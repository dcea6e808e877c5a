"""Minimal regression cases of the defects the vLLM pack found in vLLM's kernels
(docs/findings.md, V1 and V2), each a strict xfail that turns red when vLLM fixes it.
Each states our contract on a hand-sized input and calls the pack's adapter; skipped
without a vLLM source (samplecheck.backends.vllm_source)."""

import pytest
import torch

from samplecheck.backends import vllm, vllm_source

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
