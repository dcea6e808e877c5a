"""What a drawn case covers, as short bucketed labels: `draw_case` reports each one with
`hypothesis.event()`, so a run's statistics (`--hypothesis-show-statistics`, and the nightly
report's coverage plots) show which parts of the input space the examples reached.

A label reads "DIMENSION: BUCKET". Per-row pools give one label per distinct bucket in the
pool, so a case with k = (0, 5, V) reports "k: off", "k: 2..V-2" and "k: V". The dimensions:
vocab, batch, family, scale, -inf fraction (of the recipe), dtype, layout, the per-row
parameters k, p, min_p and T (temperature), the ops of a whole-sampler case (alone and as
pairs, both active in the batch), every other case field as absent/set, and "edge" labels
for the named edge sizes of `samplecheck.inputs.strategies`.
"""

import dataclasses
import itertools
import math

from samplecheck.inputs.strategies import ADVERSARIAL_VOCABS, EDGE_BATCHES, REAL_VOCABS
from samplecheck.registry.records import DTYPE_NAMES

# Upper bounds of the vocab and batch buckets (each is (previous bound, bound]; None: unbounded).
VOCAB_BOUNDS = (1, 16, 1024, 8192, 65536, 131072, None)
BATCH_BOUNDS = (1, 8, 64, 512, None)


def _span(value: int, bounds: tuple[int, ...]) -> str:
    """The bucket of `value`: "1", "2-16", ..., and ">B" above the last finite bound B."""
    low = 1
    for bound in bounds[:-1]:
        if value <= bound:
            return str(bound) if low == bound else f"{low}-{bound}"
        low = bound + 1
    return f">{low - 1}"


def _k_bucket(k: int, vocab: int) -> str:
    if k <= 0:
        return "off"
    if k == 1:
        return "1"
    if k >= vocab + 1:
        return ">V"
    if k == vocab:
        return "V"
    if k == vocab - 1:
        return "V-1"
    return "2..V-2"


def _p_bucket(p: float) -> str:
    if p >= 1.0:
        return "1 (off)"
    if p < 1e-3:
        return "<1e-3"
    return "<=0.5" if p <= 0.5 else "<=0.9" if p <= 0.9 else "<1"


def _min_p_bucket(m: float) -> str:
    if m <= 0.0:
        return "0 (off)"
    if m >= 1.0:
        return "1"
    return "<1e-3" if m < 1e-3 else "<=0.1" if m <= 0.1 else "<=0.5" if m <= 0.5 else "<1"


def _t_bucket(t: float) -> str:
    if t == 0.0:
        return "0 (greedy)"
    if t == 1.0:
        return "1"
    if not math.isfinite(t) or t > 1e4 or t < 1e-6:
        return "extreme"
    return "<0.25" if t < 0.25 else "<1" if t < 1.0 else "<=4" if t <= 4.0 else ">4"


BUCKETS = {
    "k": lambda value, vocab: _k_bucket(value, vocab),
    "p": lambda value, vocab: _p_bucket(value),
    "min_p": lambda value, vocab: _min_p_bucket(value),
    "temperature": lambda value, vocab: _t_bucket(value),
}
LABELS = {"temperature": "T"}


def recipe_events(recipe) -> list[str]:
    events = [f"vocab: {_span(recipe.vocab, VOCAB_BOUNDS)}", f"batch: {_span(recipe.batch, BATCH_BOUNDS)}",
              f"family: {recipe.family}", f"scale: {recipe.scale:g}", f"-inf fraction: {recipe.neg_inf_fraction:g}"]
    if recipe.vocab in ADVERSARIAL_VOCABS:
        events.append(f"edge: adversarial vocab {recipe.vocab}")
    if recipe.vocab in REAL_VOCABS:
        events.append(f"edge: real vocab {recipe.vocab}")
    if recipe.batch in EDGE_BATCHES:
        events.append(f"edge: batch {recipe.batch}")
    return events


def parameter_events(case, vocab: int) -> list[str]:
    """Labels of a case's own fields (not its logits recipe)."""
    events = []
    for field in dataclasses.fields(case):
        name, value = field.name, getattr(case, field.name)
        if name == "logits":
            continue
        label = LABELS.get(name, name)
        if name in BUCKETS:
            if value is None:
                events.append(f"{label}: absent")
            else:
                pool = value if isinstance(value, tuple) else (value,)
                events += sorted({f"{label}: {BUCKETS[name](v, vocab)}" for v in pool})
        elif name == "ops":
            names = sorted(op for op, _ in value)
            events.append(f"ops: {len(names)} active")
            events += [f"op: {op}" for op in names]
            events += [f"op pair: {a} + {b}" for a, b in itertools.combinations(names, 2)]
            for _, op_case in value:
                events += parameter_events(op_case, vocab)
        elif not dataclasses.is_dataclass(value):
            events.append(f"{label}: {'absent' if value is None else 'set'}")
    return events


def case_events(combo, case) -> list[str]:
    """The coverage labels of `case` drawn for `combo` (distinct, in a stable order)."""
    events = [f"dtype: {DTYPE_NAMES[combo.dtype]}", f"layout: {combo.layout}"]
    recipe = getattr(case, "logits", None)
    if recipe is not None:
        events += recipe_events(recipe)
    if dataclasses.is_dataclass(case):
        events += parameter_events(case, recipe.vocab if recipe is not None else 0)
    return list(dict.fromkeys(events))
