"""CUDA-graph replay against eager calls: a backend that declares itself capturable
(`Backend.capturable`) is captured once on a case's inputs and replayed on new inputs copied
into the captured buffers; every replay must equal, bitwise, an eager call on its own copy
of the same inputs: the output, the logits buffer with its row-stride gaps, and every
tensor argument.

A capture that raises (a host synchronisation inside the call, e.g. a value read back) fails
with the backend and the exception named; a replay that differs from eager shows a call whose
result depends on something the graph does not read from its buffers (a value or tensor
the host chose at capture time).
"""

from typing import Callable

import torch

from samplecheck.harness.call_inputs import CallInputs, clone_inputs, copy_inputs, draw_fresh_inputs
from samplecheck.harness.runner import prepare, run
from samplecheck.inputs.tensor_tree import tensors_of
from samplecheck.registry.checks import assert_bitwise_equal, assert_outputs_bitwise
from samplecheck.registry.matrix import Combo

# Fresh inputs replayed per example, after the case's own.
FRESH_INPUTS = 2


def capture(call: Callable[[], object]) -> tuple[torch.cuda.CUDAGraph, object]:
    """A CUDA graph of one `call()` and the output the capture returned (its tensors are the
    graph's static outputs), after one eager warm-up call on a side stream (torch.cuda.graph's
    documented recipe: compiles, allocator and lazy state settle outside the capture). The
    warm-up's own errors propagate as they are; errors of the capture itself are raised."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    # torch.cuda.graph leaves its capture stream current when the capture raises: the outer
    # context restores the caller's stream whatever happens.
    with torch.cuda.stream(torch.cuda.current_stream()), torch.cuda.graph(graph):
        output = call()
    return graph, output


def check_replays(combo: Combo, static: CallInputs, fresh: list[CallInputs]) -> None:
    """Capture the backend on `static` (its tensors become the graph's buffers), then for the
    static inputs as given and each of `fresh` (same signature): copy them into the buffers,
    replay, and compare with an eager call (`runner.run`) on a separate copy."""
    call = combo.backend.resolve()
    replayed = [clone_inputs(static)] + fresh  # cloned first: the warm-up writes in-place outputs
    try:
        graph, output = capture(lambda: call(static.placed.view, **static.args))
    except Exception as error:  # noqa: BLE001 (whatever the capture raised: the property's finding)
        raise AssertionError(f"{combo.id}: backend {combo.backend.name} ({combo.backend.target}) declares itself "
                             f"capturable, but capturing one call in a CUDA graph raised "
                             f"{type(error).__name__}: {error}") from error
    for i, inputs in enumerate(replayed):
        copy_inputs(inputs, static)
        graph.replay()
        expected = run(combo, inputs.placed.view, inputs.args)
        what = f"{combo.id}: graph replay {i} ({'the captured inputs' if i == 0 else 'fresh inputs'}) vs eager"
        assert_outputs_bitwise(output, expected, f"{what}, output")
        assert_bitwise_equal(static.placed.buffer, inputs.placed.buffer, f"{what}, logits buffer (gaps included)")
        for j, (after, eager) in enumerate(zip(tensors_of(static.args), tensors_of(inputs.args))):
            assert_bitwise_equal(after, eager, f"{what}, tensor argument {j} after the call")


def check_graph_replay(combo: Combo, data, case, strategy, device) -> None:
    """The property for one drawn `case` (from `strategy`): its inputs become the graph's
    buffers, and FRESH_INPUTS more of the same signature are drawn (`draw_fresh_inputs`)."""
    fresh = draw_fresh_inputs(data, combo, case, strategy, device, FRESH_INPUTS)
    static = CallInputs(*prepare(combo, case, device))
    check_replays(combo, static, fresh)
