"""A guarded and an unguarded call of a kernel whose guard is a runtime bool (the selection
kernels that take Triton longest to compile, the one-program kernel and the chunk path, and the
penalties' three kernels) specialize alike: every argument has the type, alignment and
divisibility Triton keys its compiles on (`native_specialize_impl`, run on the CPU), and the
constexprs are equal. So a run that calls them in several value-check modes (deferred, eager,
off) compiles each specialization once, not once per mode. The launches' arguments are what is
compared (on a GPU and under the interpreter, which compiles nothing, alike)."""

import pytest
import torch
from triton._C.libtriton import native_specialize_impl
from triton.backends.compiler import BaseBackend

from samplecheck.kernels import penalties, top_k_chunks, top_k_top_p
from samplecheck.kernels.runtime import device_kind
from samplecheck.kernels.top_k_chunks import CHUNKS_CONFIG, chunks_plan
from samplecheck.kernels.validation import raise_pending, unchecked_values, value_checks

pytestmark = pytest.mark.interpreter

MODES = {"deferred": lambda: value_checks("deferred"), "eager": lambda: value_checks("eager"),
         "off": unchecked_values}


def launch_keys(monkeypatch, kernel, call) -> list[tuple]:
    """What Triton would key the compile of each launch of `kernel` during `call()` on: each
    positional argument's specialization, then the keyword constexprs."""
    keys = []
    run = kernel.run

    def recording_run(*args, **kwargs):
        constexprs = {n: v for n, v in kwargs.items() if n not in ("grid", "warmup")}
        keys.append((tuple(native_specialize_impl(BaseBackend, a, False, True, True) for a in args),
                     tuple(sorted(constexprs.items()))))
        return run(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(kernel, "run", recording_run)
        call()
    return keys


def assert_modes_specialize_alike(monkeypatch, kernel, logits, apply):
    """`apply(out)` in every value-check mode: the same launch keys of `kernel` (at least one)
    and the same output."""
    keys, outputs = {}, {}
    for mode, context in MODES.items():
        out = logits.clone()

        def call():
            with context():
                apply(out)
                raise_pending()

        keys[mode] = launch_keys(monkeypatch, kernel, call)
        outputs[mode] = out
    assert keys["deferred"] and keys["deferred"] == keys["eager"] == keys["off"], keys
    assert torch.equal(outputs["deferred"], outputs["eager"]) and torch.equal(outputs["eager"], outputs["off"])


@pytest.mark.parametrize("path", ["one_program", "chunks"])
def test_guarded_and_unguarded_selection_calls_specialize_alike(device, monkeypatch, path):
    kind = device_kind(torch.empty(0, device=device))
    # The chunk path takes at most 4 rows on the CPU and vocabs from 8192 on a GPU.
    batch, vocab = (6, 300) if path == "one_program" else (2, max(300, CHUNKS_CONFIG[kind]["MIN_VOCAB"]))
    logits = torch.randn(batch, vocab, generator=torch.Generator().manual_seed(7)).to(device, torch.bfloat16)
    k = torch.tensor([3, 40, 0, 7, 299, 1][:batch], device=device)
    p = torch.tensor([0.9, 0.5, 1.0, 0.3, 0.8, 0.95][:batch], device=device)
    assert (chunks_plan(batch, vocab, kind, True, True) is not None) == (path == "chunks")
    kernel = top_k_top_p._top_k_top_p_kernel if path == "one_program" else top_k_chunks._top_k_chunks_kernel
    assert_modes_specialize_alike(monkeypatch, kernel, logits, lambda out: top_k_top_p.apply_top_k_top_p(out, k, p))


PENALTIES_PATHS = {"pairs": (penalties._penalties_pairs_kernel, dict(pairs_max_work=2**62)),
                   "row_sort": (penalties._penalties_row_sort_kernel, dict(pairs_max_work=0)),
                   "host_sorted": (penalties._penalties_kernel, dict(in_kernel_max_length=0))}


@pytest.mark.parametrize("path", PENALTIES_PATHS)
def test_guarded_and_unguarded_penalties_calls_specialize_alike(device, monkeypatch, path):
    kernel, knobs = PENALTIES_PATHS[path]
    logits = torch.randn(2, 50, generator=torch.Generator().manual_seed(7)).to(device, torch.bfloat16)
    args = dict(prompt_token_ids=torch.tensor([[1, 2, -1], [3, 8, 8]], device=device),
                output_token_ids=torch.tensor([[1, 9], [-1, 8]], device=device),
                repetition_penalty=torch.tensor([1.2, 0.8], device=device),
                frequency_penalty=torch.tensor([0.5, 0.0], device=device),
                presence_penalty=torch.tensor([0.0, -1.0], device=device))
    assert_modes_specialize_alike(monkeypatch, kernel, logits,
                                  lambda out: penalties.apply_penalties(out, **args, **knobs))
