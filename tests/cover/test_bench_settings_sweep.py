"""The settings sweep (bench/settings_sweep.py) as a smoke test under the interpreter: each value
is set in turn and the setting's own value restored, every op and size gets a cell per value
(the output compared bitwise with the first value's), and a setting that names nothing is
refused, naming the argument."""

import importlib
import sys

import pytest
import torch

from samplecheck.kernels import top_k_chunks
from samplecheck.tests.cover.bench_modules import in_checkout, loaded_on_cpu

pytestmark = [pytest.mark.interpreter, in_checkout("settings_sweep")]


@pytest.fixture(scope="module")
def sweep(device):
    yield from loaded_on_cpu("settings_sweep", device,
                             "a smoke test of the interpreter's path; on a GPU, run the sweep itself")


def test_each_value_in_turn_and_restored(sweep, tmp_path):
    before = top_k_chunks.CHUNKS_CONFIG["cpu"]["MAX_ROWS"]
    out = tmp_path / "sweep.md"
    assert sweep.main(["samplecheck.kernels.top_k_chunks:CHUNKS_CONFIG.cpu.MAX_ROWS", "0,4", "--device", "cpu",
                       "--sizes", "2x700", "--ops", "top_k", "--out", str(out)]) == 0
    assert top_k_chunks.CHUNKS_CONFIG["cpu"]["MAX_ROWS"] == before
    table = out.read_text()
    assert "| op | size | 0 | 4 |" in table
    (row,) = [line for line in table.splitlines() if line.startswith("| top_k | 2x700 |")]
    assert row.count(" =") == 2 and "DIFFERS" not in row, row


def test_logits_of_the_dtype_asked_for(sweep, tmp_path, monkeypatch):
    seen = []
    ops = importlib.import_module("bench.ops")  # importable while the fixture holds bench/'s parent on sys.path
    real = ops.make_inputs
    monkeypatch.setattr(ops, "make_inputs", lambda *a, **kw: seen.append(kw["dtype"]) or real(*a, **kw))
    out = tmp_path / "sweep.md"
    assert sweep.main(["samplecheck.kernels.top_k_chunks:CHUNKS_CONFIG.cpu.MAX_ROWS", "0,4", "--device", "cpu",
                       "--sizes", "2x300", "--ops", "top_k", "--dtype", "fp32", "--out", str(out)]) == 0
    assert seen == [torch.float32] and "fp32 logits from randn" in out.read_text()


@pytest.mark.parametrize("setting", ["samplecheck.kernels.top_k_chunks:NO_SUCH", "samplecheck.kernels.nowhere:X",
                                     "samplecheck.kernels.top_k_chunks:CHUNKS_CONFIG.cpu.NO_KEY", "no_colon"])
def test_a_setting_that_names_nothing_is_refused(sweep, setting):
    with pytest.raises(SystemExit, match="setting must be module:NAME"):
        sweep.main([setting, "1", "--device", "cpu", "--ops", "top_k"])


def test_a_setting_held_with_the_sweep_and_restored(sweep, tmp_path, monkeypatch):
    """`--with` holds another setting for the whole sweep: the k-split path's smallest batch at 1,
    so that the chunk path's batch limit at 0 sends a 2-row call there (and at 4 to the chunk
    path); the held setting is restored at the end."""
    from samplecheck.kernels import top_k_split, top_k_top_p

    launched = []
    real = top_k_top_p.launch_k_split
    monkeypatch.setattr(top_k_top_p, "launch_k_split", lambda *a, **kw: launched.append(a[0].shape) or real(*a, **kw))
    before = top_k_split.K_SPLIT_CONFIG["cpu"]["MIN_ROWS"]
    out = tmp_path / "sweep.md"
    assert sweep.main(["samplecheck.kernels.top_k_chunks:CHUNKS_CONFIG.cpu.MAX_ROWS", "0,4", "--device", "cpu",
                       "--with", "samplecheck.kernels.top_k_split:K_SPLIT_CONFIG.cpu.MIN_ROWS=1", "--sizes", "2x700",
                       "--ops", "top_k", "--out", str(out)]) == 0
    assert launched and set(launched) == {(2, 700)}
    assert top_k_split.K_SPLIT_CONFIG["cpu"]["MIN_ROWS"] == before
    (row,) = [line for line in out.read_text().splitlines() if line.startswith("| top_k | 2x700 |")]
    assert row.count(" =") == 2, row


@pytest.mark.parametrize("held", ["samplecheck.kernels.top_k_split:K_SPLIT_CONFIG.cpu.MIN_ROWS",
                                  "samplecheck.kernels.top_k_split:K_SPLIT_CONFIG.cpu.MIN_ROWS=not_a_literal"])
def test_a_held_setting_without_a_literal_is_refused(sweep, held, capsys):
    with pytest.raises(SystemExit):
        sweep.main(["samplecheck.kernels.top_k_chunks:CHUNKS_CONFIG.cpu.MAX_ROWS", "1", "--device", "cpu",
                    "--with", held, "--ops", "top_k"])
    assert "--with must be SETTING=VALUE" in capsys.readouterr().err
