"""A stand-in for a logits-processor API that takes one scalar per call and returns a new
tensor, shaped as Hugging Face's `TemperatureLogitsWarper(t)(input_ids, scores)`: the
constructor takes the scalar and rejects values the API does not support; the call returns
`scores / t`, a new tensor, and leaves `scores` as it was."""

import torch


class TemperatureWarper:
    def __init__(self, temperature: float):
        if not isinstance(temperature, float) or not temperature > 0:
            raise ValueError(f"temperature must be a float > 0, got {temperature!r}")
        self.temperature = temperature

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # In fp32 by a tensor divisor, then rounded once to the scores' dtype: PyTorch's CUDA
        # division by a Python scalar multiplies by its fp32 reciprocal, which is not l / T
        # rounded once and overflows for T below 2**-128 (transformers' finding T6).
        divisor = torch.tensor(self.temperature, dtype=torch.float32, device=scores.device)
        return (scores.float() / divisor).to(scores.dtype)
