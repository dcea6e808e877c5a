"""The documented "off" encodings of per-row parameters, as record data.

A per-row parameter turns its filter off for one row with a documented value (top-k: k <= 0
or k >= V; top-p: p = 1; min-p: 0; temperature: 1 and the greedy 0; penalties: 1, 0, 0; an id
list: a row of -1 padding; min_tokens: 0). A kernel can get any of them wrong while every row
around it binds, and drawn cases reach each only by chance. `KernelInfo.off_encodings` lists
a record's encodings; tests/cover/test_off_encodings.py writes each into one row of a drawn
case whose other rows keep their drawn values (`OffEncoding.apply`), and into rows where it
alone decides (`OffEncoding.alone`), for every backend, dtype and run.

An off value shows only where the parameter would act if it were on: a -1 pad of a prompt
only under a repetition penalty, min_tokens = 0 only on a row with stop ids and no output
yet, k = V only where no top-p or min-p of the row already masks the tail. So each encoding
names the parameters it acts with: `arms` are written at values that make it act, `acts_with`
are kept as drawn, and every other parameter of the record is switched off in that row.
"""

import dataclasses
from dataclasses import dataclass

import torch

PAD = -1  # the padding of id lists: no id


@dataclass(frozen=True)
class RowValue:
    """A per-row parameter set in one row. `param`: a keyword argument, or a field of the
    argument `within` (the sampler's SamplingBatch). `value`: a number, or "V" / "V+1" /
    "V-1" (the vocabulary size, plus or minus one), written into every entry of the row.
    `fill`: the other rows' value where the case leaves the parameter out (None: only where
    the case gives it), in a new tensor of `dtype` shaped [B, *dims] (dims: () a number per
    row, (1,) an id list, (1, 1) a list of id lists); `batch_only`: given there only as a
    field of a batch argument, which carries every op's parameters (a keyword argument of one
    op's kernel may not exist)."""

    param: str
    value: float | int | str
    fill: float | int | None = None
    dtype: torch.dtype = torch.float32
    dims: tuple[int, ...] = ()
    within: str | None = None
    batch_only: bool = False

    def resolved(self, vocab: int):
        return _resolve(self.value, vocab)

    def read(self, args: dict) -> torch.Tensor | None:
        """The parameter's tensor in `args` (None when left out)."""
        return _read(args, self.param, self.within)

    def written(self, args: dict, value: torch.Tensor) -> dict:
        """A copy of `args` with the parameter set to `value`."""
        if self.within:
            return {**args, self.within: dataclasses.replace(args[self.within], **{self.param: value})}
        return {**args, self.param: value}

    def set_row(self, args: dict, row: int, batch: int, vocab: int, device, *, fill=None, pad=None) -> dict | None:
        """A copy of `args` with `row` of the parameter at `value`, its other rows as given;
        left out by the case, a new tensor with the other rows at `fill` (None: returns None).
        With a `pad`, a list with no entry (width 0) first gets one entry of `pad` per row, so
        that the row holds one."""
        current = self.read(args)
        if current is None:
            if fill is None or (self.batch_only and self.within is None):
                return None
            current = torch.full((batch, *self.dims), fill, dtype=self.dtype, device=device)
        elif pad is not None and current.dim() > 1 and current[0].numel() == 0:
            current = torch.full((batch, *(max(n, 1) for n in current.shape[1:])), pad, dtype=current.dtype,
                                 device=device)
        changed = current.clone()
        changed[row] = self.resolved(vocab)
        return self.written(args, changed)


@dataclass(frozen=True)
class OffEncoding(RowValue):
    """One off value of one parameter. `fill`: the binding value of the other rows where the
    case leaves the parameter out (None: an id list, or min_tokens, is judged as drawn only
    where the case gives it). `near`: the nearest value that binds ("V-1" for the vocabulary
    size minus one): a defect that misreads the off value as `near` is the synthetic fault
    tests/quality injects. `arms`: the parameters it acts with, at values that make it act
    (created with their own fill where the case leaves them out); `acts_with`: those kept as
    drawn in the row where it alone decides. `added`: False for a parameter that constrains
    those it acts with: added only where the case leaves them out too."""

    near: float | int | str = 0
    arms: tuple[RowValue, ...] = ()
    acts_with: tuple[str, ...] = ()
    added: bool = True

    @property
    def label(self) -> str:
        return f"{self.param}={self.value}"

    def off_value(self, vocab: int):
        return self.resolved(vocab)

    def near_value(self, vocab: int):
        return _resolve(self.near, vocab)

    def apply(self, args: dict, row: int, batch: int, vocab: int, device) -> dict | None:
        """A copy of `args` with `row` of the parameter off and the other rows as drawn (or
        `fill`); None when the case leaves the parameter out and there is no fill."""
        return self.set_row(args, row, batch, vocab, device, fill=self.fill)

    def alone(self, args: dict, row: int, batch: int, vocab: int, device, others: tuple) -> dict | None:
        """A copy of `args` where this encoding alone decides `row`: every parameter of
        `others` (one off encoding per parameter of the record) off in that row where the case
        gives it, but those this one acts with; its arms at their values; the parameter off
        (where the case leaves it out and it can be added: its fill, else off, in the other
        rows). Lists written here hold at least one entry (an arm's fill, an id list's -1, is
        its padding). None when the parameter cannot be given (`apply`)."""
        kept = {self.param, *self.acts_with, *(arm.param for arm in self.arms)}
        for other in others:
            if other.param not in kept:
                args = other.set_row(args, row, batch, vocab, device) or args
        for arm in self.arms:
            args = arm.set_row(args, row, batch, vocab, device, fill=arm.fill, pad=arm.fill) or args
        addable = self.added or all(_read(args, name, self.within) is None for name in self.acts_with)
        fill = (self.value if self.fill is None else self.fill) if addable else None
        return self.set_row(args, row, batch, vocab, device, fill=fill, pad=self.value if self.dims else None)

    def renamed(self, param: str, within: str) -> "OffEncoding":
        """This encoding for a parameter carried as field `param` of argument `within` (its
        arms and `acts_with` keep their names there)."""
        return dataclasses.replace(self, param=param, within=within,
                                   arms=tuple(dataclasses.replace(arm, within=within) for arm in self.arms))


def per_param(encodings) -> tuple:
    """The first encoding of each parameter: how `OffEncoding.alone` switches the others off,
    and the off value of a far list's filler rows."""
    first = {}
    for off in encodings:
        first.setdefault(off.param, off)
    return tuple(first.values())


def _read(args: dict, param: str, within: str | None) -> torch.Tensor | None:
    return getattr(args[within], param) if within else args.get(param)


def _resolve(value, vocab: int):
    return {"V": vocab, "V+1": vocab + 1, "V-1": vocab - 1}[value] if isinstance(value, str) else value


def ids_off(param: str, *, dims: tuple[int, ...] = (1,), **fields) -> OffEncoding:
    """An id-list parameter whose row of -1 padding is the empty list (off); the fault reads
    the padding as id 0."""
    return OffEncoding(param, PAD, dtype=torch.int64, dims=dims, near=0, **fields)


def ids_armed(param: str) -> RowValue:
    """An id list whose row holds the last id only (repeated), the other rows empty where the
    case leaves it out."""
    return RowValue(param, "V-1", fill=PAD, dtype=torch.int64, dims=(1,))


def count(param: str, value: int) -> RowValue:
    """A per-row count (min_tokens, output_len), 0 in the other rows where the case leaves it out."""
    return RowValue(param, value, fill=0, dtype=torch.int64)


STEP = 2**-7  # a binding neighbour of an off value, exact in every dtype
REPETITION, ADDITIVE = 1.5, 0.5  # binding penalties
TOP_K_TOP_P_OFF = tuple(OffEncoding("k", value, fill=2, dtype=torch.int64, near="V-1")
                        for value in (0, -1, "V", "V+1")) + (OffEncoding("p", 1.0, fill=0.5, near=1 - STEP),)
MIN_P_OFF = (OffEncoding("min_p", 0.0, fill=0.5, near=STEP),)
TEMPERATURE_OFF = (OffEncoding("temperature", 1.0, fill=0.7, near=1 + STEP),
                   OffEncoding("temperature", 0.0, fill=0.7, near=STEP))
# The penalties act on the ids of a row's histories, and the histories through the penalties
# (and bad words: the output history serves both, and the bad-words kernel takes no penalty).
OUTPUT_HISTORY_OFF = ids_off("output_token_ids", acts_with=("bad_words",),
                             arms=(RowValue("frequency_penalty", ADDITIVE, fill=0.0, batch_only=True),))
PENALTIES_OFF = (
    OffEncoding("repetition_penalty", 1.0, fill=REPETITION, near=1 + STEP, arms=(ids_armed("prompt_token_ids"),)),
    OffEncoding("frequency_penalty", 0.0, fill=ADDITIVE, near=STEP, arms=(ids_armed("output_token_ids"),)),
    OffEncoding("presence_penalty", 0.0, fill=ADDITIVE, near=STEP, arms=(ids_armed("output_token_ids"),)),
    ids_off("prompt_token_ids", arms=(RowValue("repetition_penalty", REPETITION, fill=1.0),)),
    OUTPUT_HISTORY_OFF)
# Biases act through their values; stop ids act while output_len < min_tokens, and min_tokens
# on the row's stop ids: each armed with the others.
LOGIT_BIAS_OFF = (
    ids_off("allowed_token_ids"),
    ids_off("logit_bias_ids", arms=(RowValue("logit_bias_values", 1.0, fill=float("nan"), dims=(1,)),)),
    ids_off("stop_token_ids", arms=(count("min_tokens", 1), count("output_len", 0))),
    OffEncoding("min_tokens", 0, dtype=torch.int64, near=1, arms=(ids_armed("stop_token_ids"), count("output_len", 0))))
# Bad words act on the output history as drawn, whose ids they restrict to [0, V) (the
# penalties also take V, an ignored entry): added only where the case gives no history.
BAD_WORDS_OFF = (ids_off("bad_words", dims=(1, 1), acts_with=("output_token_ids",), added=False),
                 OUTPUT_HISTORY_OFF)
