"""Which launch path a call of our Triton kernels takes, by the names of `Backend.path_shapes`,
for the tests that run a case on each declared path (`on_each_path`: test_launch_path_shapes
and the *_on_each_launch_path variants of far rows, batch invariance and edge values); the path
depends on the call's sizes and which parameters it is given, never on the row stride.
Top-k/top-p's by standing in for each path's launch
(the call stops there and runs no kernel), min-p's and Gumbel sampling's by their launch plans
(of the sizes alone). Always the shipped kernel modules: a mutant's fresh copy of a module may
route otherwise, and what such a call did is judged by its output."""

import dataclasses
from unittest import mock

import torch

from samplecheck.inputs.recipes import materialize
from samplecheck.kernels import gumbel, top_k_top_p
from samplecheck.kernels.min_p import plan as min_p_plan

# The entry module's launch of each top-k/top-p path: the launcher it calls, or the one-program kernel.
LAUNCHES = {"one program": "_top_k_top_p_kernel", "chunks": "launch_chunks", "k split": "launch_k_split",
            "top-p split": "launch_split"}


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


def top_k_top_p_path(logits: torch.Tensor, args: dict) -> str:
    """The path `apply_top_k_top_p(logits, **args)` takes; a call that launches nothing fails."""
    stand_ins = {launch: Launch(path) for path, launch in LAUNCHES.items()}
    # check_launchable inspects the one-program kernel, replaced by its stand-in here.
    with mock.patch.multiple(top_k_top_p, check_launchable=lambda kernel, tensor: None, **stand_ins):
        try:
            top_k_top_p.apply_top_k_top_p(logits, **args)
        except Routed as routed:
            return str(routed)
    raise AssertionError(f"no path launched for logits {tuple(logits.shape)}, arguments {sorted(args)}")


def min_p_path(batch: int, vocab: int, kind: str) -> str:
    programs, splits, _ = min_p_plan(batch, vocab, kind)
    return "rows looped" if programs < batch else "rows split" if splits > 1 else "a row a program"


def gumbel_path(batch: int, vocab: int, kind: str) -> str:
    return "rows split" if gumbel.plan(batch, vocab, kind)[2] > 1 else "a row a chunk"


# The kernels whose plans pick their path from the call's sizes alone, on any device type.
PLANNED = {"min_p": min_p_path, "gumbel_sample": gumbel_path}


def path_taken(kernel: str, logits: torch.Tensor, args: dict) -> str:
    """The launch path of our Triton `kernel`'s call on `logits` with `args`, on their device."""
    if kernel == "top_k_top_p":
        return top_k_top_p_path(logits, args)
    return PLANNED[kernel](*logits.shape, logits.device.type)


def path_case(case, backend, path: str, kind: str):
    """`case` at the shape of `backend`'s launch path `path` on device type `kind`, given the
    parameters the path needs (`Backend.path_shapes`, `Backend.path_parameters`)."""
    batch, vocab = backend.path_shapes[path][kind]
    return dataclasses.replace(case, logits=dataclasses.replace(case.logits, batch=batch, vocab=vocab),
                               **backend.path_parameters.get(path, {}))


def on_each_path(combo, case, device: torch.device):
    """(path, case) for each launch path `combo`'s backend declares: `case` at the path's shape on
    `device` with the path's parameters (`path_case`), having asserted that its call takes it."""
    backend = combo.backend
    for path in backend.path_shapes:
        at_path = path_case(case, backend, path, device.type)
        logits = materialize(at_path.logits, combo.dtype, device)
        taken = path_taken(combo.info.name, logits, combo.info.make_args(at_path, logits))
        assert taken == path, f"{combo.id}: the {path} path's case {tuple(logits.shape)} takes the {taken} path"
        yield path, at_path
