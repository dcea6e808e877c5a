"""samplecheck's temperature contract on an API that takes one temperature per call and
returns a new tensor (`scalar_adapter.warper.TemperatureWarper`, shaped as Hugging Face's
`TemperatureLogitsWarper(t)(input_ids, scores)`).

The contract (docs/backends.md): `temperature(logits, temperature=None) -> logits`, in place,
one float32 temperature per row; rows with T = 0 (greedy) or T = 1 stay bitwise as they are;
a bad input raises before anything is written (TypeError for a type or dtype, ValueError for
anything else). The API takes one value per call, so the adapter calls it once per group of
rows sharing a temperature, on a copy of those rows, and writes each result back into
`logits`, which the contract changes in place. Verify it with

    samplecheck test --backend temperature=scalar_adapter:temperature --backend-only

(with this folder on PYTHONPATH), or install the package and drop the --backend flag.
"""

import torch

from scalar_adapter.warper import TemperatureWarper

LOGITS_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
UNCHANGED = (0.0, 1.0)  # greedy and identity rows: the API is not called for them


def temperature(logits: torch.Tensor, temperature: torch.Tensor | None = None) -> torch.Tensor:
    check(logits, temperature)
    if temperature is None:
        return logits
    groups: dict[float, list[int]] = {}
    for row, value in enumerate(temperature.tolist()):  # one read to the host: the API takes Python floats
        groups.setdefault(value, []).append(row)
    for value, rows in groups.items():
        if value in UNCHANGED:
            continue
        index = torch.tensor(rows, device=logits.device)
        no_ids = torch.empty(len(rows), 0, dtype=torch.int64, device=logits.device)  # the API's input_ids
        scaled = TemperatureWarper(value)(no_ids, logits.index_select(0, index))
        logits.index_copy_(0, index, scaled.to(logits.dtype))
    return logits


def check(logits, temperature) -> None:
    """Every check before any write."""
    if not isinstance(logits, torch.Tensor):
        raise TypeError("logits must be a torch.Tensor")
    if logits.dtype not in LOGITS_DTYPES:
        raise TypeError(f"logits dtype must be float32, bfloat16 or float16, got {logits.dtype}")
    if logits.dim() != 2:
        raise ValueError(f"logits must be 2-D [batch, vocab], got {logits.dim()}-D")
    if logits.device.type not in ("cpu", "cuda"):
        raise ValueError(f"logits must be on a CPU or CUDA device, got {logits.device}")
    if logits.size(1) > 1 and logits.stride(1) != 1:
        raise ValueError("logits must have column stride 1")
    if temperature is None:
        return
    if not isinstance(temperature, torch.Tensor):
        raise TypeError("temperature must be a torch.Tensor or None")
    if temperature.dtype != torch.float32:
        raise TypeError(f"temperature dtype must be float32, got {temperature.dtype}")
    if temperature.shape != (logits.size(0),):
        raise ValueError(f"temperature must have shape [batch] = [{logits.size(0)}], got {list(temperature.shape)}")
    if temperature.device != logits.device:
        raise ValueError(f"temperature must be on the logits' device {logits.device}")
    if not temperature.is_contiguous():
        raise ValueError("temperature must be contiguous")
    if not bool((torch.isfinite(temperature) & (temperature >= 0)).all()):
        raise ValueError("temperature must be finite and >= 0")


# Declared for samplecheck (docs/backends.md): GPU memory beyond the inputs is at most the
# copy of the rows of one group and the API's result (two logits-sized tensors), the row
# index and an empty input_ids, which fit in 1 MiB.
temperature.samplecheck = {"extra_memory": lambda logits, args: 2 * logits.numel() * logits.element_size() + 2**20}
