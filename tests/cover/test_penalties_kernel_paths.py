"""The two in-kernel paths of apply_penalties against its host-sorted path, bitwise: the row
sort at every number of sorted keys (the lists' P + O entries padded to a power of two, or to
far more), the pair kernel at every block size (lists spanning several blocks: the output
list's, then the prompt list's). Ids repeated within and across the two lists and across block
edges, -1 and V in the prompt, -1 tails in the output, int32 and int64 lists, rows with every
penalty off."""

import pytest
import torch

from samplecheck.kernels import penalties
from samplecheck.kernels.runtime import device_kind
from samplecheck.registry.checks import assert_bitwise_equal

pytestmark = pytest.mark.interpreter

IN_KERNEL = 2**30  # an in_kernel_max_length that keeps every list of these tests in the kernel


def drawn_call(device: str, seed: int) -> tuple[torch.Tensor, dict]:
    """bf16 logits [3, 40] and apply_penalties' arguments (module docstring) for `seed`."""
    g = torch.Generator().manual_seed(seed)
    batch, vocab, prompt_len, output_len = 3, 40, 21 + seed, 13 + 2 * seed
    prompt = torch.randint(-1, vocab + 1, (batch, prompt_len), generator=g)
    output = torch.randint(0, vocab, (batch, output_len), generator=g)
    output[1, output_len // 2:] = -1
    output[2, 3] = -1  # a -1 inside the list: every later entry is ignored
    logits = torch.randn(batch, vocab, generator=g).to(torch.bfloat16).to(device)
    params = {"repetition_penalty": torch.tensor([1.5, 1.0, 0.7]), "frequency_penalty": torch.tensor([0.5, 0.0, -1.0]),
              "presence_penalty": torch.tensor([0.25, 0.0, 2.0])}
    if seed == 1:
        params = {"repetition_penalty": torch.tensor([1.5, 1.0, 1.0]),
                  "frequency_penalty": torch.tensor([0.5, 0.0, 0.0]),
                  "presence_penalty": torch.tensor([0.25, 0.0, 0.0])}
    return logits, {"prompt_token_ids": prompt.to(device, torch.int32 if seed == 2 else torch.int64),
                    "output_token_ids": output.to(device), **{k: v.to(device) for k, v in params.items()}}


def assert_matches_host_path(logits: torch.Tensor, args: dict, pairs_max_work: int, path: str):
    in_kernel = penalties.apply_penalties(logits.clone(), **args, in_kernel_max_length=IN_KERNEL,
                                          pairs_max_work=pairs_max_work)
    on_host = penalties.apply_penalties(logits.clone(), **args, in_kernel_max_length=0)
    assert_bitwise_equal(in_kernel, on_host, f"{path} vs host-sorted path")
    assert not torch.equal(in_kernel, logits)


@pytest.mark.parametrize("min_length", [1, 64, 128])
@pytest.mark.parametrize("seed", range(3))
def test_row_sort_matches_host_sorted_path(device, monkeypatch, min_length, seed):
    logits, args = drawn_call(device, seed)
    monkeypatch.setitem(penalties.ROW_SORT_MIN_LENGTH, device_kind(logits), min_length)
    assert_matches_host_path(logits, args, 0, f"row-sort path (at least {min_length} keys)")


@pytest.mark.parametrize("block", [1, 4, 8, 16])
@pytest.mark.parametrize("seed", range(3))
def test_pair_blocks_match_host_sorted_path(device, monkeypatch, block, seed):
    logits, args = drawn_call(device, seed)
    monkeypatch.setitem(penalties.PAIR_LAUNCH, device_kind(logits), (block, 1))
    assert_matches_host_path(logits, args, IN_KERNEL, f"pair path (block {block})")
