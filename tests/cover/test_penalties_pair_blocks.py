"""The pair-compare path of apply_penalties against its sorted path, bitwise, on lists that
span several of the pair kernel's blocks (the output list's blocks, then the prompt list's)
at every block size: ids repeated within and across the two lists and across block edges,
-1 and V in the prompt, -1 tails in the output, int32 and int64 lists, rows with every
penalty off."""

import pytest
import torch

from samplecheck.kernels import penalties
from samplecheck.kernels.runtime import device_kind
from samplecheck.registry.checks import assert_bitwise_equal

pytestmark = pytest.mark.interpreter


@pytest.mark.parametrize("block", [1, 4, 8, 16])
@pytest.mark.parametrize("seed", range(3))
def test_pair_blocks_match_sorted_path(device, monkeypatch, block, seed):
    g = torch.Generator().manual_seed(seed)
    batch, vocab, prompt_len, output_len = 3, 40, 21 + seed, 13 + 2 * seed
    prompt = torch.randint(-1, vocab + 1, (batch, prompt_len), generator=g)
    output = torch.randint(0, vocab, (batch, output_len), generator=g)
    output[1, output_len // 2:] = -1
    logits = torch.randn(batch, vocab, generator=g).to(torch.bfloat16).to(device)
    params = {"repetition_penalty": torch.tensor([1.5, 1.0, 0.7]), "frequency_penalty": torch.tensor([0.5, 0.0, -1.0]),
              "presence_penalty": torch.tensor([0.25, 0.0, 2.0])}
    if seed == 1:
        params = {**params, "repetition_penalty": torch.tensor([1.5, 1.0, 1.0]),
                  "frequency_penalty": torch.tensor([0.5, 0.0, 0.0]), "presence_penalty": torch.tensor([0.25, 0.0, 0.0])}
    args = {"prompt_token_ids": prompt.to(device, torch.int32 if seed == 2 else torch.int64),
            "output_token_ids": output.to(device), **{k: v.to(device) for k, v in params.items()}}
    monkeypatch.setitem(penalties.PAIR_LAUNCH, device_kind(logits), (block, 1))
    pairs = penalties.apply_penalties(logits.clone(), **args, pairs_max_length=2**30)
    ordered = penalties.apply_penalties(logits.clone(), **args, pairs_max_length=0)
    assert_bitwise_equal(pairs, ordered, f"pair path (block {block}) vs sorted path")
    assert not torch.equal(pairs, logits)
