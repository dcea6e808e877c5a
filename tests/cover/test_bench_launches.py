"""The launch-by-launch timing (bench/launches.py) as a smoke test under the interpreter: a
call's launches are counted by kernel name in launch order, those past the limit skipped, and
each op and size gets a row per launch with the time of the launches up to it."""

import pytest

from samplecheck.tests.cover.bench_modules import in_checkout, loaded_on_cpu

pytestmark = [pytest.mark.interpreter, in_checkout("launches")]


@pytest.fixture(scope="module")
def launches(device):
    yield from loaded_on_cpu("launches", device,
                             "a smoke test of the interpreter's path; on a GPU, run the tool itself")


class _Kernel:
    def __init__(self, name):
        self.__name__ = name


def test_launches_past_the_limit_are_skipped(launches):
    limit = launches.LaunchLimit()
    made = []
    launch = lambda kernel, grid: lambda *args: made.append(kernel.__name__)  # noqa: E731 - a stand-in launcher
    limit.begin(2)
    for name in ("a", "b", "c"):
        limit.launcher(_Kernel(name), (1,), launch)()
    assert made == ["a", "b"] and limit.names == ["a", "b", "c"]
    limit.begin(None)
    limit.launcher(_Kernel("d"), (1,), launch)()
    assert made == ["a", "b", "d"] and limit.names == ["d"]


def test_a_row_per_launch_in_order(launches, tmp_path):
    out = tmp_path / "launches.md"
    assert launches.main(["--ops", "top_k", "--device", "cpu", "--sizes", "5x600", "--out", str(out)]) == 0
    table = out.read_text()
    kernels = [line.split(" | ")[1] for line in table.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert kernels == ["_lanes_kernel", "_bound_kernel", "_collect_kernel", "_finish_kernel"], table
    assert "## top_k at 5x600" in table


def test_a_setting_held_for_the_run(launches, tmp_path):
    """`--with` routes a size onto the path to be split: 3 rows take the k-split path's four
    launches with its smallest batch held at 1 and the chunk path's largest at 0."""
    out = tmp_path / "launches.md"
    assert launches.main(["--ops", "top_k", "--device", "cpu", "--sizes", "3x600", "--out", str(out),
                          "--with", "samplecheck.kernels.top_k_split:K_SPLIT_CONFIG.cpu.MIN_ROWS=1",
                          "--with", "samplecheck.kernels.top_k_chunks:CHUNKS_CONFIG.cpu.MAX_ROWS=0"]) == 0
    assert "| 4 | _finish_kernel |" in out.read_text()
