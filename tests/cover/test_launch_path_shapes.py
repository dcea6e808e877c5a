"""The declared launch paths of our kernels (`Backend.path_shapes`, which
test_error_inputs_on_each_launch_path runs the error inputs at, given `Backend.path_parameters`):
on the run's device, the case `launch_paths.on_each_path` builds for each path (here a
record's example at the path's shape, given the path's parameters) takes that path
(top-k/top-p: by standing in for each path's launch); min-p's and Gumbel sampling's shapes,
by their launch plans, on every device."""

import pytest
import torch

import samplecheck.infos  # noqa: F401  (registers every record)
from samplecheck.registry.matrix import RECORDS, Combo
from samplecheck.tests.cover.launch_paths import LAUNCHES, PLANNED, on_each_path

pytestmark = pytest.mark.interpreter

# Our backends declaring launch paths (the Triton kernels), by record.
WITH_PATHS = {name: backend for name, info in RECORDS.items() for backend in info.backends if backend.path_shapes}


def test_the_backends_with_launch_paths():
    """Each has a way to find the path a call takes (launch_paths), and parameters only for its paths."""
    assert set(WITH_PATHS) == {"top_k_top_p", *PLANNED}, WITH_PATHS
    assert set(WITH_PATHS["top_k_top_p"].path_shapes) == set(LAUNCHES) == set(WITH_PATHS["top_k_top_p"].path_parameters)
    assert all(set(backend.path_parameters) <= set(backend.path_shapes) for backend in WITH_PATHS.values())


@pytest.mark.parametrize("kernel", sorted(WITH_PATHS))
def test_each_path_s_case_takes_its_path(kernel, device):
    """On a GPU with three rows or more: rows 2**31 elements apart then have a row stride
    within int32, which an int32 row index times the stride overflows."""
    info, backend = RECORDS[kernel], WITH_PATHS[kernel]
    device = torch.device(device)
    for path, shapes in backend.path_shapes.items():
        assert shapes["cuda"][0] >= 3, f"{kernel}: the {path} path's GPU shape {shapes['cuda']} has fewer than 3 rows"
    seen = []
    for path, case in on_each_path(Combo(info, backend, torch.float32, "contig"), info.examples[0].case, device):
        assert (case.logits.batch, case.logits.vocab) == backend.path_shapes[path][device.type]
        seen.append(path)
    assert seen == list(backend.path_shapes)


@pytest.mark.parametrize("kernel", sorted(PLANNED))
def test_planned_shapes_take_their_paths(kernel):
    """On every device (a plan takes the device type)."""
    for path, by_kind in WITH_PATHS[kernel].path_shapes.items():
        for kind, shape in by_kind.items():
            assert PLANNED[kernel](*shape, kind) == path, f"the {path} path's shape on {kind}, {shape}"
