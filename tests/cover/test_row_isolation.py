"""A row's output depends only on its own logits and parameters: poisoning one row (NaN,
+inf, all -inf or the dtype's max) leaves every other row bitwise unchanged; and the call is
deterministic: run again on the same input it gives the same bits, on a GPU also when several
calls run at once on their own streams while the GPU is busy with other work (the class of
vllm#51187: outputs that change with what else is resident). Under pytest-xdist the gate's
workers share one GPU, so every call there also runs beside other processes' work."""

import pytest
import torch
from hypothesis import given, strategies as st

from samplecheck.harness.runner import prepare, run
from samplecheck.inputs.drawing import draw_case
from samplecheck.registry.checks import assert_outputs_bitwise, assert_same_output, output_rows

pytestmark = pytest.mark.interpreter

POISON_ROWS = ("nan", "+inf", "-inf", "max")
# test_deterministic on CUDA: calls made at once on their own streams, and the matmuls
# (LOAD_SIZE square, fp32) another stream runs beside them.
CONCURRENT_CALLS = 3
LOAD_SIZE = 2048
LOAD_MATMULS = 4


def poison_row(logits: torch.Tensor, row: int, kind: str) -> None:
    value = {"nan": float("nan"), "+inf": float("inf"), "-inf": float("-inf"),
             "max": torch.finfo(logits.dtype).max}[kind]
    logits[row].fill_(value)


@pytest.mark.matrix(layouts=("contig", "padded64"))
@given(data=st.data())
def test_row_isolation(combo, device, budget, data):
    case = draw_case(data, combo, combo.info.cases(budget).filter(lambda c: c.logits.batch >= 2))
    row = case.logits.seed % case.logits.batch
    kind = POISON_ROWS[(case.logits.seed // case.logits.batch) % len(POISON_ROWS)]
    placed, args = prepare(combo, case, device)
    poisoned = placed.view.clone()
    poison_row(poisoned, row, kind)
    clean = run(combo, placed.view, args)
    dirty = run(combo, poisoned, args)
    others = [r for r in range(case.logits.batch) if r != row]
    assert_same_output(combo.info, output_rows(dirty, others), output_rows(clean, others),
                       f"{combo.id}: rows {others} (positions below index this list) beside a {kind} row {row}",
                       case.logits.vocab)


@pytest.mark.matrix(layouts=("contig",))
@given(data=st.data())
def test_deterministic(combo, device, budget, data):
    case = draw_case(data, combo, combo.info.cases(budget))
    placed, args = prepare(combo, case, device)
    copies = [placed.view.clone() for _ in range(CONCURRENT_CALLS if device.type == "cuda" else 1)]
    first = run(combo, placed.view, args)
    for what, output in _repeated(combo, copies, args, device):
        assert_outputs_bitwise(output, first, f"{combo.id}: {what}, against a first call on the same input")


def _repeated(combo, inputs: list, args: dict, device) -> list[tuple[str, object]]:
    """The call again on each of `inputs` (copies of one input), with what each was: on CUDA
    all at once, each on its own stream, while another stream keeps the GPU busy with
    matmuls (a reduction whose order follows how its blocks are scheduled shows there);
    elsewhere one after the other."""
    if device.type != "cuda":
        return [("a second call", run(combo, copy, args)) for copy in inputs]
    streams = [torch.cuda.Stream(device) for _ in range(len(inputs) + 1)]
    for stream in streams:
        stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(streams[-1]):
        load = torch.ones(LOAD_SIZE, LOAD_SIZE, device=device)
        for _ in range(LOAD_MATMULS):
            torch.mm(load, load)
    outputs = []
    for stream, copy in zip(streams, inputs):
        with torch.cuda.stream(stream):
            outputs.append(run(combo, copy, args))
    torch.cuda.synchronize(device)
    return [(f"a call on stream {i} of {len(inputs)} at once beside a matmul load", output)
            for i, output in enumerate(outputs)]
