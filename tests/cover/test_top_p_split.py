"""`samplecheck.kernels.top_k_top_p_split`: which calls split their rows over several programs,
and that a split call masks every row bit for bit as the one-program kernel does (the same
cut), on rows that take each of its branches: NaN, +inf and -inf entries, a row of -inf,
ties, flat and peaked rows, tiny and large p, p = 1 beside p < 1, a strided view."""

import pytest
import torch

from samplecheck.kernels import top_k_top_p_split as split
from samplecheck.kernels.runtime import cdiv
from samplecheck.kernels.top_k_top_p import apply_top_k_top_p

pytestmark = pytest.mark.interpreter


@pytest.mark.parametrize("device_kind", sorted(split.SPLIT_CONFIG))
def test_split_plan_routes_small_top_p_calls(device_kind):
    config = split.SPLIT_CONFIG[device_kind]
    vocab = max(config["MIN_VOCAB"], 40 * config["MIN_CHUNK"])
    for batch in (1, 2, config["MAX_ROWS"]):
        splits, chunk = split.split_plan(batch, vocab, device_kind, False, True)
        assert 2 <= splits <= min(config["MAX_SPLITS"], cdiv(config["PROGRAMS"], batch))
        assert chunk % config["BLOCK"] == 0 and splits == cdiv(vocab, chunk)
    assert split.split_plan(1, vocab, device_kind, True, True) is None, "top-k given: one program a row"
    assert split.split_plan(1, vocab, device_kind, False, False) is None
    assert split.split_plan(config["MAX_ROWS"] + 1, vocab, device_kind, False, True) is None
    assert split.split_plan(1, config["MIN_CHUNK"], device_kind, False, True) is None, "a single chunk"
    if config["MIN_VOCAB"] > 2 * config["MIN_CHUNK"]:
        assert split.split_plan(1, config["MIN_VOCAB"] - 1, device_kind, False, True) is None


def _rows(kind: str, batch: int, vocab: int, generator: torch.Generator) -> torch.Tensor:
    x = torch.randn(batch, vocab, generator=generator)
    if kind == "flat":
        x *= 0.01
    elif kind == "peaked":
        x[:, :4] += 12.0
    elif kind == "ties":
        x = torch.randint(0, 3, (batch, vocab), generator=generator).float()
    elif kind == "edge":
        x[0, 1], x[0, 7], x[1, 3] = float("nan"), float("inf"), float("-inf")
        x[2] = float("-inf")
    return x


@pytest.mark.parametrize("kind", ["randn", "flat", "peaked", "ties", "edge"])
@pytest.mark.parametrize("chunks, extra", [(2, 44), (15, 80)])  # V = chunks * MIN_CHUNK + extra: 300, 2000 on CPU
def test_split_masks_equal_one_program(kind, chunks, extra, device, monkeypatch):
    kind_of_device = torch.device(device).type
    vocab = chunks * split.SPLIT_CONFIG[kind_of_device]["MIN_CHUNK"] + extra
    generator = torch.Generator().manual_seed(vocab)
    dtype = torch.bfloat16 if kind == "randn" else torch.float32
    padded = _rows(kind, 3, vocab + 5, generator).to(dtype).to(device)
    logits = padded[:, :vocab]  # a strided view
    p = torch.tensor([0.9, 1e-6, 1.0] if kind != "edge" else [0.5, 0.99, 0.7], device=device)
    monkeypatch.setitem(split.SPLIT_CONFIG[kind_of_device], "MIN_VOCAB", 0)
    monkeypatch.setitem(split.SPLIT_CONFIG[kind_of_device], "MAX_ROWS", 3)
    assert split.split_plan(3, vocab, kind_of_device, False, True) is not None
    split_out = apply_top_k_top_p(logits.clone(), None, p)
    monkeypatch.setitem(split.SPLIT_CONFIG[kind_of_device], "MAX_ROWS", 0)
    one_program = apply_top_k_top_p(logits.clone(), None, p)
    torch.testing.assert_close(split_out, one_program, rtol=0, atol=0, equal_nan=True,
                               msg=lambda m: f"{kind} rows, V = {vocab}: split and one-program masks differ\n{m}")


class _Launches:
    """A stand-in for one kernel: records the arguments of each `kernel[grid](...)` launch."""

    def __init__(self):
        self.args = []

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.args.append(args)


# (device kind, batch, vocab): the CUDA plans split 151936 into 38 chunks and 100000 into 25
# (an odd B * S: the tallies take a pad), the CPU plan 384 into 3.
@pytest.mark.parametrize("device_kind, batch, vocab", [("cuda", 1, 151936), ("cuda", 1, 100000),
                                                       ("cuda", 3, 100000), ("cuda", 32, 151936), ("cpu", 1, 384),
                                                       ("cpu", 2, 300)])
def test_split_buffers_are_one_aligned_allocation(device_kind, batch, vocab, monkeypatch):
    """The four buffers the kernels get (the tallies of both search steps in one) are disjoint
    parts of one allocation of `split_buffer_bytes`, each 16-byte aligned (launches stubbed: no
    kernel runs)."""
    launches = {name: _Launches() for name in ("_stats_kernel", "_tally_kernel", "_collect_kernel", "_rank_kernel")}
    for name, stub in launches.items():
        monkeypatch.setattr(split, name, stub)
    plan = split.split_plan(batch, vocab, device_kind, False, True)
    assert plan is not None
    splits = plan[0]
    split.launch_split(torch.zeros(batch, vocab), torch.full((batch,), 0.5), plan, device_kind, None, False)
    config = split.SPLIT_CONFIG[device_kind]
    pivots = config["NUM_PIVOTS"]
    # Each buffer (from the argument that the first launch taking it gets) and the bytes the kernels address in it.
    parts = {"state": (launches["_tally_kernel"].args[0][4], torch.int64, batch * (split.PIVOTS.value + pivots) * 8),
             "keys": (launches["_stats_kernel"].args[0][3], torch.int32, batch * splits * 2 * 4),
             "tallies": (launches["_tally_kernel"].args[0][5], torch.int64, 2 * batch * splits * (2 * pivots + 1) * 8),
             "scratch": (launches["_collect_kernel"].args[0][6], torch.float32, batch * config["CAP"] * 4)}
    storage = parts["state"][0].untyped_storage()
    assert storage.nbytes() == split.split_buffer_bytes(batch, plan, device_kind)
    spans = []
    for name, (buffer, dtype, size) in parts.items():
        assert buffer.dtype == dtype, name
        assert buffer.untyped_storage().data_ptr() == storage.data_ptr(), f"{name}: not in the call's one buffer"
        start = buffer.data_ptr() - storage.data_ptr()
        assert start % 16 == 0 and buffer.data_ptr() % 16 == 0, f"{name} starts at byte {start}"
        assert start + size <= storage.nbytes() and buffer.numel() * buffer.element_size() >= size, name
        spans.append((start, start + size, name))
    spans.sort()
    for (_, end, name), (start, _, after) in zip(spans, spans[1:]):
        assert end <= start, f"{name} overlaps {after}"
