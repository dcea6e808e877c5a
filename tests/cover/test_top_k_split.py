"""`samplecheck.kernels.top_k_split`: which calls split their rows over chunk programs and four
launches, and that such a call masks every row bit for bit as the one-program kernel does (the
same cut), on rows that take each branch: k within the lanes and past them, brackets that fit
the scratch and brackets that overflow it (ties at the k-th value), k off beside k on, NaN, +inf
and -inf entries, rows of NaN and of -inf, signed zeros, every logits dtype, a strided view; a
bracket that starts above -inf where fewer than k lanes hold an entry; and its deferred value
checks (a bad k: nothing written, the eager error pending)."""

import pytest
import torch
from triton.runtime.jit import KernelInterface

from samplecheck.infos.top_k_top_p import K_SPLIT_REGIME
from samplecheck.inputs.recipes import LogitsRecipe, materialize
from samplecheck.kernels import top_k_chunks, top_k_split
from samplecheck.kernels.top_k_top_p import apply_top_k_top_p, scratch_bytes
from samplecheck.kernels.top_k_top_p_torch import apply_top_k_top_p_torch
from samplecheck.kernels.validation import LOGIT_DTYPES, raise_pending, value_checks
from samplecheck.tests.cover.host_keys import order_key

pytestmark = pytest.mark.interpreter


@pytest.mark.parametrize("device_kind", sorted(top_k_split.K_SPLIT_CONFIG))
def test_k_split_plan_routing(device_kind):
    c = top_k_split.K_SPLIT_CONFIG[device_kind]
    plan = top_k_split.k_split_plan
    vocab = max(c["MIN_VOCAB"], 2 * c["CHUNK"])
    widest = c["MAX_SPLITS"] * c["CHUNK"]
    assert plan(c["MIN_ROWS"], vocab, device_kind, True, False) == -(-vocab // c["CHUNK"])
    assert plan(c["MAX_ROWS"], widest, device_kind, True, False) == c["MAX_SPLITS"]
    assert plan(c["MAX_ROWS"], widest + 1, device_kind, True, False) is None, "past MAX_SPLITS chunks"
    assert plan(c["MIN_ROWS"] - 1, vocab, device_kind, True, False) is None
    assert plan(c["MAX_ROWS"] + 1, vocab, device_kind, True, False) is None
    assert plan(c["MIN_ROWS"], c["CHUNK"], device_kind, True, False) is None, "a single chunk"
    assert plan(c["MIN_ROWS"], vocab, device_kind, True, True) is None, "p given: another path"
    assert plan(c["MIN_ROWS"], vocab, device_kind, False, False) is None
    if c["MIN_VOCAB"] > 2 * c["CHUNK"]:
        assert plan(c["MIN_ROWS"], c["MIN_VOCAB"] - 1, device_kind, True, False) is None
    chunks = top_k_chunks.CHUNKS_CONFIG[device_kind]
    assert c["MIN_ROWS"] > chunks["MAX_ROWS"], "the chunk path takes the smaller batches"


@pytest.mark.parametrize("device_kind", sorted(top_k_split.K_SPLIT_CONFIG))
def test_a_regression_example_takes_the_path(device_kind):
    """On each device's config, a regression example of the record takes this path (the kill
    table finds its mutants through them), over several chunks a row."""
    takes = [example.ref for example in K_SPLIT_REGIME
             if top_k_split.k_split_plan(example.case.logits.batch, example.case.logits.vocab, device_kind,
                                         example.case.k is not None, example.case.p is not None)]
    assert takes, f"no example of K_SPLIT_REGIME takes the k-split path on {device_kind}'s config: resize them"


@pytest.fixture
def config(device, monkeypatch):
    """The path's config on the test's device, taking every vocab and from one row (the chunk
    path, which the router tries first, taking none)."""
    config = top_k_split.K_SPLIT_CONFIG[device.type]
    monkeypatch.setitem(config, "MIN_VOCAB", 1)
    monkeypatch.setitem(config, "MIN_ROWS", 1)
    monkeypatch.setitem(top_k_chunks.CHUNKS_CONFIG[device.type], "MAX_ROWS", 0)
    return config


def _rows(kind: str, batch: int, vocab: int, gen: torch.Generator) -> torch.Tensor:
    x = torch.randn(batch, vocab, generator=gen) * 3
    if kind == "three_levels":  # one entry above hundreds at the k-th value: the bracket overflows the scratch
        x = torch.randint(0, 3, (batch, vocab), generator=gen).float()
        x[:, 5] = 3.0
    elif kind == "edges":
        x[0, :6] = torch.tensor([float("nan"), float("inf"), 0.0, -0.0, float("-inf"), float("nan")])
        x[0, 200::97] = float("inf")
        x[1, ::7] = float("nan")
        x[2] = float("-inf")
        x[3] = float("nan")
    elif kind == "zeros":
        x[:] = 0.0
        x[:, 1::2] = -0.0
    return x


def _masked(logits, k, config, monkeypatch, **setting):
    """The output of a call on a clone of `logits` with the config's `setting` (none: as it is)."""
    out = logits.clone()
    with monkeypatch.context() as patch:
        for key, value in setting.items():
            patch.setitem(config, key, value)
        apply_top_k_top_p(out, k, None)
    return out


def _ks(config, vocab: int) -> list[int]:
    """k for 4-row calls: within the lanes (12 and 14: brackets of more entries than a rank
    program takes, on the CPU's randn rows of 3 chunks), at and past the row's lane count, near
    and past V, off."""
    lanes = -(-vocab // config["CHUNK"]) * config["LANES"]
    return [1, 7, lanes, lanes + 1, vocab - 1, 0, -1, vocab, vocab + 3, 50, 12, 14]


def _assert_split_masks_as_one_program(logits, config, monkeypatch, message):
    batch, vocab = logits.shape
    assert top_k_split.k_split_plan(batch, vocab, logits.device.type, True, False) is not None
    ks = _ks(config, vocab)
    for first in range(0, len(ks), batch):
        k = torch.tensor(ks[first:first + batch], dtype=torch.int64 if first % 8 else torch.int32,
                         device=logits.device)
        split = _masked(logits, k, config, monkeypatch)
        one_program = _masked(logits, k, config, monkeypatch, MAX_ROWS=0)
        bits = torch.int32 if logits.dtype == torch.float32 else torch.int16
        assert torch.equal(split.view(bits), one_program.view(bits)), f"{message}, k = {k.tolist()}"


@pytest.mark.parametrize("kind", ["randn", "three_levels", "edges", "zeros"])
@pytest.mark.parametrize("chunks, extra", [(2, 5), (3, 0)], ids=["V2chunks+5", "V3chunks"])
def test_split_masks_as_one_program(kind, chunks, extra, device, config, monkeypatch):
    vocab = chunks * config["CHUNK"] + extra
    logits = _rows(kind, 4, vocab, torch.Generator().manual_seed(vocab + len(kind))).to(device)
    _assert_split_masks_as_one_program(logits, config, monkeypatch, f"{kind} rows, V = {vocab}")


@pytest.mark.parametrize("dtype", [d for d in LOGIT_DTYPES if d != torch.float32], ids=str)
def test_split_masks_half_precision_strided_rows_as_one_program(dtype, device, config, monkeypatch):
    vocab = 2 * config["CHUNK"] + 33
    padded = _rows("edges", 4, vocab + 40, torch.Generator().manual_seed(4)).to(dtype).to(device)
    logits = padded[:, 17:17 + vocab]
    before = padded.clone()
    _assert_split_masks_as_one_program(logits, config, monkeypatch, f"{dtype}, a strided view")
    apply_top_k_top_p(logits, torch.tensor([1, 50, 3, 2], device=device), None)
    bits = torch.int16
    assert torch.equal(padded[:, :17].view(bits), before[:, :17].view(bits)), "wrote before the view"
    assert torch.equal(padded[:, 17 + vocab:].view(bits), before[:, 17 + vocab:].view(bits)), "wrote past the view"


@pytest.fixture
def launch_args(monkeypatch):
    """The arguments of each Triton launch (`kernel[grid](...)`) during the test, by kernel name
    (the last launch's); the launches run as they would."""
    seen = {}
    launch = KernelInterface.__getitem__

    def recording(kernel, grid):
        run = launch(kernel, grid)
        return lambda *args, **kwargs: seen.__setitem__(kernel.__name__, args) or run(*args, **kwargs)
    monkeypatch.setattr(KernelInterface, "__getitem__", recording)
    return seen


def test_the_tests_reach_every_branch(device, config, launch_args):
    """Rows of the kinds above reach each branch: a bracket ranked from the scratch (k within
    the lanes), one that overflows it (three levels), k past the lanes (the row's min key as lo)."""
    vocab = 3 * config["CHUNK"]
    k = torch.tensor([7, 7, 3 * config["LANES"] + 1, 0], device=device)
    logits = torch.cat([_rows("randn", 1, vocab, torch.Generator().manual_seed(1)),
                        _rows("three_levels", 1, vocab, torch.Generator().manual_seed(2)),
                        _rows("randn", 2, vocab, torch.Generator().manual_seed(3))]).to(device)
    apply_top_k_top_p(logits, k, None)
    state = launch_args["_bound_kernel"][3].view(4, top_k_split.STATE.value).cpu()
    keys = launch_args["_lanes_kernel"][3].view(4, 3, 2).cpu()
    lo, counter = state[:, top_k_split.LO.value], state[:, top_k_split.COUNTER.value]
    assert counter[0] <= config["CAP"] < counter[1], counter
    assert lo[2] == keys[2, :, 0].min(), "k past the lanes: lo is the row's min key"


def test_a_bracket_never_reaches_down_to_neg_inf(device, config, launch_args):
    """Rows whose entries above -inf lie in a few runs (fewer lanes hold one than k; the second
    row's entries fewer than k too): lo is the row's smallest key above -inf, not -inf's."""
    logits = materialize(LogitsRecipe(batch=3, vocab=3 * config["CHUNK"], family="runs", seed=3), torch.float32,
                         device)
    k = torch.tensor([50, 100, 20], device=device)
    expected = apply_top_k_top_p_torch(logits.clone(), k, None)
    torch.testing.assert_close(apply_top_k_top_p(logits.clone(), k, None), expected, rtol=0, atol=0)
    state = launch_args["_bound_kernel"][3].view(3, top_k_split.STATE.value).cpu()
    rows = logits.cpu()
    smallest = torch.where(rows.isneginf(), float("inf"), rows).min(dim=1).values
    assert state[:, top_k_split.LO.value].tolist() == order_key(smallest).tolist()


def test_buffer_bytes_match_the_allocation(device, config, launch_args):
    logits = torch.randn(3, 3 * config["CHUNK"] + 5, device=device)
    apply_top_k_top_p(logits, torch.tensor([3, 40, 1], device=device), None)
    expected = scratch_bytes(3, logits.size(1), device.type, True, False)
    assert expected == top_k_split.k_split_buffer_bytes(3, 4, device.type)
    buffer = launch_args["_bound_kernel"][3].untyped_storage()
    assert buffer.nbytes() == expected
    for name, at in (("_lanes_kernel", 3), ("_lanes_kernel", 4), ("_collect_kernel", 4)):
        assert launch_args[name][at].untyped_storage().data_ptr() == buffer.data_ptr(), "not in the call's one buffer"


def test_a_bad_k_writes_nothing_and_raises_when_deferred(device, config):
    logits = torch.randn(3, 2 * config["CHUNK"] + 5, device=device)
    before = logits.clone()
    k = torch.tensor([3, -2, 5], device=device)
    with value_checks("eager"), pytest.raises(ValueError) as eager:
        apply_top_k_top_p(logits, k, None)
    with value_checks("deferred"), pytest.raises(ValueError) as deferred:
        apply_top_k_top_p(logits, k, None)
        raise_pending()
    assert str(deferred.value) == str(eager.value)
    assert torch.equal(logits, before), "the deferred call wrote"
