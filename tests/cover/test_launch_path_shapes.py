"""The declared launch-path shapes of our kernels (`Backend.path_shapes`, which
test_error_inputs_on_each_launch_path runs the error inputs at): on the run's device, a call of
each declared shape takes that path (top-k/top-p: with k alone, p alone or both); min-p's and
Gumbel sampling's, by their launch plans, on every device."""

import pytest
import torch

from samplecheck.infos import gumbel_sample, min_p, top_k_top_p as top_k_top_p_info
from samplecheck.kernels import gumbel, top_k_top_p
from samplecheck.kernels.min_p import plan as min_p_plan

pytestmark = pytest.mark.interpreter

# The entry module's launch of each path: the launcher it calls, or the one-program kernel.
LAUNCHES = {"one program": "_top_k_top_p_kernel", "chunks": "launch_chunks", "k split": "launch_k_split",
            "top-p split": "launch_split"}
PARAMETERS = {"k alone": (True, False), "p alone": (False, True), "k and p": (True, True)}


class Routed(Exception):
    """Raised in place of a path's launch: the path the call took."""


class Launch:
    """Stands in for a launcher, or a kernel indexed by its grid: raises Routed(path)."""

    def __init__(self, path: str):
        self.path = path

    def __call__(self, *args, **kwargs):
        raise Routed(self.path)

    def __getitem__(self, grid):
        return self


def routes(batch: int, vocab: int, device, has_k: bool, has_p: bool) -> str:
    """The path a [batch, vocab] call with k and p given or not takes."""
    k = torch.ones(batch, dtype=torch.int64, device=device) if has_k else None
    p = torch.full((batch,), 0.5, device=device) if has_p else None
    try:
        top_k_top_p.apply_top_k_top_p(torch.zeros(batch, vocab, device=device), k, p)
    except Routed as routed:
        return str(routed)
    raise AssertionError("no path launched")


def test_top_k_top_p_shapes_take_their_paths(device, monkeypatch):
    shapes = top_k_top_p_info.PATH_SHAPES
    assert set(shapes) == set(LAUNCHES)
    for path, launch in LAUNCHES.items():
        monkeypatch.setattr(top_k_top_p, launch, Launch(path))
    monkeypatch.setattr(top_k_top_p, "check_launchable", lambda kernel, logits: None)  # of the stand-in kernel
    kind = torch.device(device).type
    for path, shape in shapes.items():
        taken = {given: routes(*shape[kind], device, *flags) for given, flags in PARAMETERS.items()}
        assert path in taken.values(), f"the {path} path's shape {shape[kind]} takes {taken}"


def min_p_path(batch: int, vocab: int, kind: str) -> str:
    programs, splits, _ = min_p_plan(batch, vocab, kind)
    return "rows looped" if programs < batch else "rows split" if splits > 1 else "a row a program"


def gumbel_path(batch: int, vocab: int, kind: str) -> str:
    return "rows split" if gumbel.plan(batch, vocab, kind)[2] > 1 else "a row a chunk"


@pytest.mark.parametrize("shapes, path_of", [(min_p.PATH_SHAPES, min_p_path), (gumbel_sample.PATH_SHAPES, gumbel_path)],
                         ids=["min_p", "gumbel_sample"])
def test_planned_shapes_take_their_paths(shapes, path_of):
    """On every device (a plan takes the device type)."""
    for path, by_kind in shapes.items():
        for kind, shape in by_kind.items():
            assert path_of(*shape, kind) == path, f"the {path} path's shape on {kind}, {shape}"
