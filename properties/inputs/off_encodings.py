"""The documented "off" encodings of per-row parameters, as record data.

A per-row parameter turns its filter off for one row with a documented value (top-k: k <= 0
or k >= V; top-p: p = 1; min-p: 0; temperature: 1 and the greedy 0; penalties: 1, 0, 0; an id
list: a row of -1 padding). A kernel can get any of them wrong while every row around it
binds, and drawn cases reach each only by chance. `KernelInfo.off_encodings` lists a
record's encodings; tests/cover/test_off_encodings.py writes each into one row of a drawn
case whose other rows keep their drawn values, for every backend, dtype and run.
"""

import dataclasses
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class OffEncoding:
    """One off value of one parameter. `value`: a number, or "V" / "V+1" (the vocabulary
    size, plus one), written into one row (for an id list, the whole row). `binding`: the
    other rows' value when the drawn case leaves the parameter out (None: the encoding needs
    a drawn parameter, as id lists do), of `dtype`. `within`: the argument holding the
    parameter as a field (the sampler's SamplingBatch), None for a keyword argument."""

    param: str
    value: float | int | str
    binding: float | int | None = None
    dtype: torch.dtype = torch.float32
    within: str | None = None
    near: float | int | str = 0

    # `near`: the nearest value that binds, "V-1" for the vocabulary size minus one: a defect
    # that misreads the off value as `near` is the synthetic fault tests/quality injects.

    @property
    def label(self) -> str:
        return f"{self.param}={self.value}"

    def off_value(self, vocab: int):
        return _resolve(self.value, vocab)

    def near_value(self, vocab: int):
        return _resolve(self.near, vocab)

    def apply(self, args: dict, row: int, batch: int, vocab: int, device, *, add_missing: bool = True) -> dict | None:
        """A copy of `args` with `row` of the parameter off and the other rows as drawn (or
        `binding`); None when the case leaves the parameter out and there is no binding, or
        `add_missing` is False (a backend that implements only the cases it `accepts`)."""
        current = self.read(args)
        if current is None:
            if self.binding is None or not add_missing:
                return None
            current = torch.full((batch,), self.binding, dtype=self.dtype, device=device)
        changed = current.clone()
        changed[row] = self.off_value(vocab)
        return self.written(args, changed)

    def read(self, args: dict) -> torch.Tensor | None:
        """The parameter's tensor in `args` (None when left out)."""
        return getattr(args[self.within], self.param) if self.within else args.get(self.param)

    def written(self, args: dict, value: torch.Tensor) -> dict:
        """A copy of `args` with the parameter set to `value`."""
        if self.within:
            return {**args, self.within: dataclasses.replace(args[self.within], **{self.param: value})}
        return {**args, self.param: value}

    def renamed(self, param: str, within: str) -> "OffEncoding":
        """This encoding for a parameter carried as field `param` of argument `within`."""
        return dataclasses.replace(self, param=param, within=within)


def _resolve(value, vocab: int):
    return {"V": vocab, "V+1": vocab + 1, "V-1": vocab - 1}[value] if isinstance(value, str) else value


def ids_off(*params: str) -> tuple[OffEncoding, ...]:
    """Id-list parameters whose row of -1 padding is the empty list (off); the fault reads
    the padding as id 0."""
    return tuple(OffEncoding(p, -1, near=0) for p in params)


STEP = 2**-7  # a binding neighbour of an off value, exact in every dtype
TOP_K_TOP_P_OFF = tuple(OffEncoding("k", value, 2, torch.int64, near="V-1") for value in (0, -1, "V", "V+1")) + (
    OffEncoding("p", 1.0, 0.5, near=1 - STEP),)
MIN_P_OFF = (OffEncoding("min_p", 0.0, 0.5, near=STEP),)
TEMPERATURE_OFF = (OffEncoding("temperature", 1.0, 0.7, near=1 + STEP), OffEncoding("temperature", 0.0, 0.7, near=STEP))
PENALTIES_OFF = (OffEncoding("repetition_penalty", 1.0, 1.5, near=1 + STEP),
                 OffEncoding("frequency_penalty", 0.0, 0.5, near=STEP),
                 OffEncoding("presence_penalty", 0.0, 0.5, near=STEP)) + ids_off("prompt_token_ids", "output_token_ids")
LOGIT_BIAS_OFF = ids_off("allowed_token_ids", "logit_bias_ids", "stop_token_ids") + (OffEncoding("min_tokens", 0, near=1),)
BAD_WORDS_OFF = ids_off("bad_words", "output_token_ids")
