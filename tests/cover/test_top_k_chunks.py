"""Our top-k kernel's chunk path (`samplecheck.kernels.top_k_chunks`): which calls take it, that
the record's regression examples of its regime take it on every device's launch config, and
that it masks every row bitwise as the one-program kernel does, top-k alone and top-k + top-p.

The paths are compared on rows the drawn cases rarely hold together: a batch mixing k = 1,
k at and past K_MAX (the last program's row search), k off (0, -1, V, above V) and k = V - 1;
p off, tiny, middling and near 1 beside them; NaN and +-inf entries, NaN and -inf rows, +inf
survivors, ties (at the k-th value, and chunks with more entries at their k-th value than
their lists hold: the top-p total's tie count and the last program's pass over such chunks),
signed zeros; one chunk and several, a last chunk shorter than k; every logits dtype, a
strided view, int32 and int64 k; each digit width of the chunks' selection.
"""

import pytest
import torch

from samplecheck.infos.top_k_top_p import GPU_CHUNK_REGIME, SMALL_K_ALONE, SMALL_K_WITH_P
from samplecheck.kernels import top_k_chunks, top_k_top_p
from samplecheck.kernels.validation import LOGIT_DTYPES

pytestmark = pytest.mark.interpreter


@pytest.fixture
def config(device, monkeypatch):
    """The chunk path's config on the test's device, taking every vocab and at most 4 rows."""
    config = top_k_chunks.CHUNKS_CONFIG[device.type]
    monkeypatch.setitem(config, "MIN_VOCAB", 1)
    monkeypatch.setitem(config, "MAX_ROWS", 4)
    return config


@pytest.mark.parametrize("device_kind", ("cuda", "cpu"))
def test_chunks_plan_routing(device_kind):
    c = top_k_chunks.CHUNKS_CONFIG[device_kind]
    chunk, rows, vocab = 1 << c["COL_BITS"], c["MAX_ROWS"], max(c["MIN_VOCAB"], 1)
    widest = c["MAX_MERGE"] // c["K_MAX"] * chunk  # the widest row whose lists fit the merge
    plan = top_k_chunks.chunks_plan
    assert plan(rows, widest, device_kind, True, False) == widest // chunk
    assert plan(1, vocab, device_kind, True, False) == -(-vocab // chunk)
    assert plan(rows + 1, widest, device_kind, True, False) is None
    assert plan(1, widest + 1, device_kind, True, False) is None
    assert plan(1, vocab, device_kind, True, True) == (-(-vocab // chunk) if c["WITH_P"] else None)
    assert plan(1, vocab, device_kind, False, True) is None
    assert plan(1, vocab, device_kind, False, False) is None
    if c["MIN_VOCAB"] > 1:
        assert plan(1, c["MIN_VOCAB"] - 1, device_kind, True, False) is None


def _takes_chunk_path(example, device_kind: str) -> bool:
    """Whether the example's call takes the chunk path there with every row's k listed (k <=
    K_MAX), over several chunks a row (or one, with p: a one-chunk row's ties)."""
    case, c = example.case, top_k_chunks.CHUNKS_CONFIG[device_kind]
    splits = top_k_chunks.chunks_plan(case.logits.batch, case.logits.vocab, device_kind, True, case.p is not None)
    return splits is not None and (splits > 1 or case.p is not None) and max(case.k) <= c["K_MAX"]


# The regimes the examples stand for; the kill table finds the chunk path's mutants through
# them on whichever device it runs.
REGIMES = {"top-k alone": (SMALL_K_ALONE, GPU_CHUNK_REGIME[0]), "with p": (SMALL_K_WITH_P[0], GPU_CHUNK_REGIME[1]),
           "with p, k-th value tied past k": (SMALL_K_WITH_P[1], GPU_CHUNK_REGIME[2])}


@pytest.mark.parametrize("device_kind", ("cuda", "cpu"))
@pytest.mark.parametrize("regime", list(REGIMES))
def test_regression_examples_take_the_chunk_path(device_kind, regime):
    assert any(_takes_chunk_path(example, device_kind) for example in REGIMES[regime]), (
        f"no regression example of the regime {regime!r} takes the chunk path on {device_kind}'s config: resize "
        f"them with the config (samplecheck.infos.top_k_top_p)")


def _rows(kind: str, batch: int, vocab: int, gen: torch.Generator) -> torch.Tensor:
    x = torch.randn(batch, vocab, generator=gen) * 3
    if kind == "ties":
        x = x.round()
    elif kind == "three_levels":  # each chunk's k-th value held by more entries than its list has slots
        x = torch.randint(0, 3, (batch, vocab), generator=gen).float()
    elif kind == "edges" and vocab > 6:
        x[0, :6] = torch.tensor([float("nan"), float("inf"), 0.0, -0.0, float("-inf"), float("nan")])
        x[1 % batch, ::7] = float("nan")
        x[-1] = float("-inf")
    elif kind == "zeros":
        x[:] = 0.0
        x[:, 1::2] = -0.0
    elif kind == "nan_row":
        x[0] = float("nan")
    elif kind == "inf" and vocab > 3:
        x[0, 3] = float("inf")
        x[1 % batch, ::5] = float("-inf")
    return x


def _masked(logits, k, p, config, monkeypatch, **setting):
    """The output of a call on a clone of `logits` with the config's `setting` (none: as it is)."""
    out = logits.clone()
    with monkeypatch.context() as patch:
        for key, value in setting.items():
            patch.setitem(config, key, value)
        top_k_top_p.apply_top_k_top_p(out, k, p)
    return out


def _masks_of_both_paths(logits, k, p, config, monkeypatch):
    """(the chunk path's output, the one-program kernel's) for a call on a clone of `logits`."""
    return _masked(logits, k, p, config, monkeypatch), _masked(logits, k, p, config, monkeypatch, MAX_ROWS=0)


def _assert_same_bits(chunked, one_program, message):
    bits = torch.int32 if chunked.dtype == torch.float32 else torch.int16
    assert torch.equal(chunked.view(bits), one_program.view(bits)), message


@pytest.fixture
def zeroed_buffers(monkeypatch):
    """Every tensor `Tensor.new_zeros` makes during the test, in order (the chunk path's buffer)."""
    made = []
    real_new_zeros = torch.Tensor.new_zeros
    monkeypatch.setattr(torch.Tensor, "new_zeros",
                        lambda self, *a, **kw: made.append(real_new_zeros(self, *a, **kw)) or made[-1])
    return made


# p for the rows of a call with top-p (cycled beside the k list): off, tiny, middling, near 1.
TOP_PS = [0.9, 1.0, 1e-6, 0.5, 0.999, 0.3, 0.99, 0.7]


@pytest.mark.parametrize("dtype", LOGIT_DTYPES, ids=str)
@pytest.mark.parametrize("kind", ["randn", "ties", "three_levels", "edges", "zeros", "nan_row", "inf"])
@pytest.mark.parametrize("chunks, extra", [(0, 1), (0, 7), (1, 0), (3, 5)], ids=["V1", "V7", "V1chunk", "V3chunks+5"])
@pytest.mark.parametrize("with_p", [False, True], ids=["k", "k_p"])
def test_chunk_path_masks_as_one_program(dtype, kind, chunks, extra, with_p, device, config, monkeypatch):
    batch, vocab, k_max = 4, chunks * (1 << config["COL_BITS"]) + extra, config["K_MAX"]
    gen = torch.Generator().manual_seed(vocab + len(kind))
    logits = _rows(kind, batch, vocab, gen).to(dtype).to(device)
    ks = [1, k_max, k_max + 1, max(vocab - 1, 1), 0, -1, vocab, vocab + 3, 5, 2, 17]
    for first in range(0, len(ks), batch):
        k = torch.tensor((ks[first:] + ks)[:batch], dtype=torch.int64 if first % 2 else torch.int32, device=device)
        p = torch.tensor((TOP_PS[first % len(TOP_PS):] + TOP_PS)[:batch], device=device) if with_p else None
        assert top_k_chunks.chunks_plan(batch, vocab, device.type, True, with_p) is not None
        chunked, one_program = _masks_of_both_paths(logits, k, p, config, monkeypatch)
        _assert_same_bits(chunked, one_program, f"k = {k.tolist()}, p = {p}")


@pytest.mark.parametrize("kind", ["three_levels", "edges"])
def test_other_digit_widths_mask_as_one_program(kind, device, config, monkeypatch):
    """The config's DIGIT_BITS is every other test's; the widths a launch setting may pick."""
    vocab = 3 * (1 << config["COL_BITS"]) + 5
    k = torch.tensor([1, 7, config["K_MAX"], 2], device=device)
    for dtype in LOGIT_DTYPES:
        logits = _rows(kind, 4, vocab, torch.Generator().manual_seed(1)).to(dtype).to(device)
        for p in (None, torch.tensor([0.6, 1.0, 0.9, 1e-6], device=device)):
            one_program = _masked(logits, k, p, config, monkeypatch, MAX_ROWS=0)
            for digit_bits in (1, 4):
                chunked = _masked(logits, k, p, config, monkeypatch, DIGIT_BITS=digit_bits)
                _assert_same_bits(chunked, one_program, f"{dtype}, p = {p}, {digit_bits} bits")


def test_three_levels_overflow_the_lists(device, config, zeroed_buffers):
    """The kind "three_levels" reaches the chunks whose k-th value has more entries than their
    list's slots (the buffer's per-chunk state records it)."""
    vocab = 3 * (1 << config["COL_BITS"])
    logits = _rows("three_levels", 2, vocab, torch.Generator().manual_seed(0)).to(device)
    top_k_top_p.apply_top_k_top_p(logits, torch.tensor([2, config["K_MAX"]], device=device), None)
    splits, k_max = 3, config["K_MAX"]
    states = zeroed_buffers[-1][:, splits * k_max:splits * k_max + splits]
    assert bool(((states & 1) == 1).all()), states


def test_chunk_path_on_a_strided_view(device, config, monkeypatch):
    gen = torch.Generator().manual_seed(3)
    vocab = 2 * (1 << config["COL_BITS"]) + 1
    base = (torch.randn(3, vocab + 40, generator=gen) * 2).bfloat16().to(device)
    logits = base[:, 17:17 + vocab]
    k = torch.tensor([1, config["K_MAX"], config["K_MAX"] + 9], device=device)
    chunked, one_program = _masks_of_both_paths(logits, k, torch.tensor([0.8, 0.95, 0.5], device=device), config,
                                                monkeypatch)
    assert torch.equal(chunked.view(torch.int16), one_program.view(torch.int16))
    before = base.clone()
    top_k_top_p.apply_top_k_top_p(logits, k, None)
    assert torch.equal(base[:, :17].view(torch.int16), before[:, :17].view(torch.int16))
    assert torch.equal(base[:, 17 + vocab:].view(torch.int16), before[:, 17 + vocab:].view(torch.int16))


def test_buffer_bytes_match_the_allocation(device, config, zeroed_buffers):
    kind = device.type
    logits = torch.randn(2, 3 * (1 << config["COL_BITS"]) + 5, device=device)
    top_k_top_p.apply_top_k_top_p(logits, torch.tensor([3, 40], device=device), None)
    splits = top_k_chunks.chunks_plan(2, logits.size(1), kind, True, False)
    expected = top_k_top_p.scratch_bytes(2, logits.size(1), kind, True, False)
    assert expected == top_k_chunks.chunks_buffer_bytes(2, splits, kind, top_k_top_p.LAUNCH_CONFIG[kind]["CAP"])
    assert [t.numel() * t.element_size() for t in zeroed_buffers] == [expected]
