"""The resource report (bench/resources.py) on the CPU: a call recorded at the GPU's launch tables
(64 rows of 151936 take the k-split top-k path's four launches there, the one-program kernel on
the CPU's tables) without running its kernels, each launch compiled for sm_90 with its
registers, shared memory and programs an SM; and how programs an SM follow from those."""

import pytest

import torch

from samplecheck.harness.lowering import Resources, _stand_in, global_load_widths
from samplecheck.tests.cover.bench_modules import in_checkout, loaded_on_cpu

pytestmark = [pytest.mark.interpreter, in_checkout("resources")]


@pytest.fixture(scope="module")
def resources(device):
    yield from loaded_on_cpu("resources", device, "it compiles for the GPU on the CPU; on a GPU, run the tool itself")


def test_each_launch_at_the_gpu_tables(resources, tmp_path):
    out = tmp_path / "resources.md"
    assert resources.main(["--ops", "top_k", "--sizes", "64x151936", "--out", str(out)]) == 0
    table = out.read_text()
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [row[1] for row in rows] == ["_lanes_kernel", "_bound_kernel", "_collect_kernel", "_finish_kernel"], table
    assert [row[2] for row in rows] == ["64x19", "64", "64x19", "64"], table
    for _, _, _, warps, registers, local, shared, programs, _, _ in rows:
        assert warps == "8" and 0 < int(registers) <= 255 and int(local) >= 0 and int(shared) >= 0, table
        assert 1 <= int(programs) <= 8, table
    # Compiled as a GPU launch is: the aligned bf16 rows' loads are specialized, so the lanes
    # pass loads eight entries at once, pipelined (unspecialized, one entry a load, synchronous).
    assert int(rows[0][8]) > 0 and rows[0][9].startswith("16: "), table
    assert "## top_k at 64x151936" in table and "sm_90" in table


def test_the_gpu_is_refused(resources):
    with pytest.raises(SystemExit, match="--device"):
        resources.main(["--ops", "top_k", "--device", "cuda"])


@pytest.mark.parametrize("found, programs", [
    (Resources(110, 0, 1024, 8, 0), 2),  # 14 register blocks a warp: 28672 registers a program
    (Resources(255, 0, 0, 4, 0), 2),  # 32 blocks a warp
    (Resources(32, 0, 200_000, 4, 0), 1),  # shared memory bounds it
    (Resources(16, 0, 0, 1, 0), 32),  # the SM's limit on programs
    (Resources(16, 0, 0, 32, 0), 2),  # its limit on warps
])
def test_programs_an_sm_holds(found, programs):
    assert found.programs_per_sm() == programs


@pytest.mark.parametrize("aligned", [True, False])
def test_a_tensor_stands_in_with_its_alignment(aligned):
    tensor = _stand_in(("tensor", "bfloat16", aligned))
    assert tensor.dtype == torch.bfloat16 and (tensor.data_ptr() % 16 == 0) == aligned
    assert _stand_in(("value", 32000)) == 32000


def test_global_loads_counted_by_width():
    sass = """
        LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64] ;
        LDGDEPBAR ;
        @!P0 LDG.E.U16 R3, desc[UR4][R4.64] ;
        LDG.E R5, desc[UR4][R6.64] ;
        LDG.E R7, desc[UR4][R6.64+0x4] ;
        LDG.E.64.STRONG.GPU R8, desc[UR4][R6.64] ;
        STG.E.128 desc[UR4][R2.64], R12 ;
    """
    assert global_load_widths(sass) == ((16, 1), (8, 1), (4, 2), (2, 1))
