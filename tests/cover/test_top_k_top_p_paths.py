"""The top-k/top-p record's declared launch-path shapes (`Backend.path_shapes`, which
test_error_inputs_on_each_launch_path runs the error inputs at): on the run's device, a call of
each declared shape takes that path, with k alone, p alone or both."""

import pytest
import torch

from samplecheck.infos.top_k_top_p import PATH_SHAPES
from samplecheck.kernels import top_k_top_p

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


def test_each_declared_shape_takes_its_path(device, monkeypatch):
    assert set(PATH_SHAPES) == set(LAUNCHES)
    for path, launch in LAUNCHES.items():
        monkeypatch.setattr(top_k_top_p, launch, Launch(path))
    monkeypatch.setattr(top_k_top_p, "check_launchable", lambda kernel, logits: None)  # of the stand-in kernel
    kind = torch.device(device).type
    for path, shape in PATH_SHAPES.items():
        taken = {given: routes(*shape(kind), device, *flags) for given, flags in PARAMETERS.items()}
        assert path in taken.values(), f"the {path} path's shape {shape(kind)} takes {taken}"
