"""Declared semantics: the legitimate axes along which production samplers differ.

A backend declares a value per axis (`Backend.semantics`, or `"semantics"` in a plug-in's
`fn.samplecheck` declaration); an undeclared axis takes its default, the strict contract
that our records and oracles state. A declared value swaps in that axis's oracle branch
(and the check and bound it implies) for that backend alone; everything outside the axis
is judged as before, so a declaration relaxes only along its axis.

`declared_record(info, backend)` is the record as that backend is judged (the matrix's
`Combo` applies it, so every test, the runner's oracle call included, sees it);
`axis_marks(info, backend)` are the skips a declaration implies (tests that need our own
random stream); `describe(backend)` is the text the pytest header and sweep table print.
The memory bound is declared separately (`Backend.extra_memory`).
"""

import dataclasses
import math
from dataclasses import dataclass

import torch

from samplecheck.oracles.gumbel import own_stream_reference
from samplecheck.oracles.min_p import min_p_softmax_reference
from samplecheck.oracles.penalties import penalties_model_reference
from samplecheck.oracles.temperature import temperature_reference
from samplecheck.oracles.top_k_top_p import top_k_top_p_declared_reference
from samplecheck.oracles.ulp import ulp32
from samplecheck.registry import checks
from samplecheck.registry.layouts import as_bits
from samplecheck.registry.records import Oracle

TOP_K_TOP_P_RECORDS = ("top_k_top_p", "top_k_top_p_sample")


@dataclass(frozen=True)
class Axis:
    """One axis: its values (the default, strict one first), the records it applies to (None:
    every record), and per value the oracle branch and the bound the check then uses (`bounds`,
    text)."""

    name: str
    records: tuple[str, ...] | None
    bounds: dict[str, str]
    doc: str

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(self.bounds)

    @property
    def default(self) -> str:
        return self.values[0]


AXES = {axis.name: axis for axis in (
    Axis("tie_policy", TOP_K_TOP_P_RECORDS, {
        "keep_all_ties": "every value tied with the k-th largest is kept (exact)",
        "exactly_k_any": "exactly k kept: the values above the k-th, then any of its ties (tied group "
                         "admitted either way, its kept count checked exactly)",
        "exactly_k_lowest_index": "exactly k kept: the values above the k-th, then its ties by lowest id (exact)"},
        "which of the values tied at the k-th largest top-k keeps"),
    Axis("top_k_values", TOP_K_TOP_P_RECORDS, {
        "input": "top-k compares the input values (exact)",
        "fp32_probabilities": "top-k compares an fp32 softmax of the row (keep_all_ties there): finite values "
                              "within 4 eps32 (|k-th - max| + 1) of the k-th largest, or whose probability lies "
                              "within 4 * 2**-149 of its (subnormal or 0 in fp32), whose fp32 probabilities may "
                              "round equal, admitted either way while the k-th survives top-p; top-p's band "
                              "widened by their mass"},
        "what top-k ranks: the logits, or probabilities a softmax rounded to fp32"),
    Axis("top_p_boundary", TOP_K_TOP_P_RECORDS, {
        "strict": "keep x iff the mass strictly above x (by value) < p; band: the record's tolerance x mass",
        "strict_by_position": "keep x iff the mass before x in a descending sort < p, ties in any order: a tied "
                              "group straddling p is admitted either way; same band",
        "inclusive": "keep x iff the mass above x <= p; same band",
        "pivot_search": "strict_by_position with the cut probability found by a bounded ternary search (18 "
                        "steps): survivors within (2/3)**18 (max prob - min prob) of the cut admitted either way"},
        "the top-p keep rule at the boundary"),
    Axis("compute_dtype", TOP_K_TOP_P_RECORDS + ("penalties",), {
        "fp32": "softmax/cumsum (top-p) and each penalty step in fp32, rounded to the logits' dtype once",
        "logits_dtype": "in the logits' dtype: top-p band widened by 2 eps(dtype) (the softmax's and the "
                        "cumsum's roundings); penalties: each step rounded to the logits' dtype (exact model)"},
        "the dtype value ops compute in"),
    Axis("min_p_softmax", ("min_p", "min_p_sample"), {
        "none": "log space: keep l >= max + log(min_p), the threshold in fp32 (the record's band)",
        "fp32": "probability space: drop p < min_p * max(p), p an fp32 softmax of the row: log-ratios within "
                "u (2 |l - max| + 10) + 3 u32 of log(min_p), and probabilities within two fp32 subnormals of the "
                "threshold, admitted either way (u = 2**-24)",
        "logits_dtype": "probability space as fp32, the softmax and the product stored in the logits' dtype: "
                        "u (2 |l - max| + 10) + 3 u(dtype), and two of that dtype's subnormals"},
        "where min-p compares: log space, or a softmax in fp32 or in the logits' dtype"),
    Axis("division", ("temperature", "penalties"), {
        "ieee": "the correctly rounded fp32 quotient (bitwise)",
        "reciprocal": "l * fl32(1 / r), both correctly rounded (bitwise against that model)",
        "approximate": "an fp32 division within 2 ulp (Triton's `/` on NVIDIA GPUs): temperature within 2 ulp "
                       "(fp32) / 1 ulp (bf16, fp16); penalties: the reciprocal model within 5 fp32 ulp of the "
                       "largest step plus 1 ulp of the result"},
        "the arithmetic of a division by a temperature or a repetition penalty"),
    Axis("frequency_rounding", ("penalties",), {
        "one": "l - f * c rounded once, only where c > 0 (bitwise)",
        "two": "l - fl32(f * c), then l - fl32(q * [c > 0]), on every entry of a penalised row, IEEE signed "
               "zeros (bitwise against that model)"},
        "the roundings of the frequency and presence steps"),
    Axis("layout_invariance", ("logprobs",), {
        "bitwise": "outputs bitwise equal across layouts and batch mates",
        "summation_order": "the logprob values' reduction order may follow the layout (Triton specialises on "
                           "pointer and stride alignment): across layouts and batch mates, values within "
                           "ceil(log2 V) eps32 (a reordered sum of V terms, relative) plus 2 fp32 ulp of each "
                           "value; ids and ranks bitwise; reruns on the same input still bitwise"},
        "what a kernel's output may depend on besides its row's values"),
    Axis("random_stream", ("gumbel_sample", "top_k_top_p_sample", "min_p_sample"), {
        "ours": "sampled ids equal the oracle's for our noise (exact, within the fp32 band)",
        "own": "the backend's own noise: judged by the sampling law, seed reproducibility, batch invariance and "
               "the non-finite and greedy rules only"},
        "where the randomness of a sampler comes from"),
    Axis("nan_policy", None, {
        "contract": "NaN logits as docs/backends.md states (NaN reads as -inf where values are compared: never "
                    "counted, kept by a filter that is on, or drawn; elementwise ops keep a NaN, any NaN; bad words "
                    "overwrite a banned NaN), judged against the oracle",
        "row_unspecified": "a row holding NaN has an unspecified result: the properties that write NaN into rows "
                           "(test_edge_values, test_gumbel's) leave it unjudged; every other row of the call is "
                           "still judged against the oracle"},
        "what a row holding NaN gives"),
)}
# Axes that choose which rows a property judges, with no oracle branch.
ROW_AXES = ("nan_policy",)

# Tests that need our own random stream, per record: skipped for a backend declaring
# `random_stream: own` (the exact checks of that record admit any finite id instead).
OUR_STREAM_TESTS: dict[str, tuple[str, ...]] = {}


def validate(kernel: str, semantics: dict) -> None:
    """ValueError naming the axis and its allowed values or records, for a bad declaration."""
    for name, value in semantics.items():
        if name not in AXES:
            raise ValueError(f"semantics axis {name!r} is unknown; axes: {', '.join(AXES)}")
        axis = AXES[name]
        if value not in axis.values:
            raise ValueError(f"semantics {name}={value!r}: allowed values are {', '.join(axis.values)}")
        if axis.records is not None and kernel not in axis.records:
            raise ValueError(f"semantics axis {name!r} applies to {', '.join(axis.records)}, not {kernel!r}")
    ranks_probabilities = semantics.get("top_k_values", "input") != "input"
    if ranks_probabilities and semantics.get("tie_policy", "keep_all_ties") != "keep_all_ties":
        raise ValueError(f"semantics top_k_values={semantics['top_k_values']!r} is defined with "
                         "tie_policy='keep_all_ties' only")


def declared(kernel: str, semantics: dict) -> dict[str, str]:
    """Every axis of `kernel`: the declared value or the default."""
    return {a.name: semantics.get(a.name, a.default) for a in AXES.values() if a.records is None or kernel in a.records}


def nan_rows_unspecified(info) -> bool:
    """Whether the record as a backend is judged (`declared_record`) leaves rows holding NaN
    unjudged (`nan_policy: row_unspecified`)."""
    return info.semantics.get("nan_policy") == "row_unspecified"


def describe(semantics: dict) -> str:
    """The declared (non-default) values, for report headers: "axis=value, ..."."""
    return ", ".join(f"{k}={v}" for k, v in semantics.items() if v != AXES[k].default)


def axis_marks(kernel: str, semantics: dict) -> list[tuple[str, str]]:
    """(test, reason) skips that a declaration implies."""
    if semantics.get("random_stream") != "own":
        return []
    return [(test, "declares its own random stream (semantics random_stream=own): this test needs ours")
            for test in OUR_STREAM_TESTS.get(kernel, ())]


def declared_record(info, semantics: dict):
    """`info` as a backend declaring `semantics` is judged: the record itself when nothing
    departs from the defaults (strict behaviour unchanged), else with the axes merged into
    `info.semantics` and what the branch replaces: the record's reference, check, tolerance
    (where the axis widens a band) or comparison of outputs across layouts."""
    values = declared(info.name, semantics)
    if all(v == AXES[k].default for k, v in values.items()):
        return info
    merged = {**info.semantics, **values}
    if all(v == AXES[k].default for k, v in values.items() if k not in ROW_AXES):
        return dataclasses.replace(info, semantics=merged)
    branch = BRANCHES[info.name](info, values)
    if "reference" in branch:
        branch["reference"] = BranchOracle(branch["reference"])
    return dataclasses.replace(info, semantics=merged, **branch)


@dataclass(frozen=True)
class BranchOracle(Oracle):
    """An axis's oracle branch in the record's Oracle contract: the branch function takes
    (logits, semantics, tolerance, **args) and decides itself what it uses."""

    def __call__(self, logits: torch.Tensor, args: dict, semantics: dict, tolerance):
        return self.function(logits, semantics, tolerance, **args)


def _top_p_tolerance(info, values: dict) -> dict:
    """The record's top-p band per dtype, widened by 2 eps(dtype) for a softmax and cumsum
    taken in the logits' dtype (each rounds once, relative to the mass)."""
    if values["compute_dtype"] != "logits_dtype":
        return info.tolerance
    return {d: t + (2 * torch.finfo(d).eps if d != torch.float32 else 0.0) for d, t in info.tolerance.items()}


def _top_k_top_p(info, values: dict) -> dict:
    def reference(logits, semantics, tolerance, *, k, p, seed=None):
        return top_k_top_p_declared_reference(
            logits, k, p, tie_policy=values["tie_policy"], top_p_boundary=values["top_p_boundary"],
            top_k_values=values["top_k_values"], band=tolerance)

    tolerance = _top_p_tolerance(info, values)
    if info.sample is not None:  # the sampler record: ids checked against kept | ambiguous
        return {"reference": reference, "tolerance": tolerance}

    def check(original, output, ref, what):
        info.check(original, output, ref, what)
        checks.assert_group_counts(original, output, ref.group, ref.group_count, what)
    return {"reference": reference, "check": check, "tolerance": tolerance}


def _penalties(info, values: dict) -> dict:
    def reference(logits, semantics, tolerance, **args):
        return penalties_model_reference(logits, **args, division=values["division"],
                                         frequency_rounding=values["frequency_rounding"],
                                         step_dtype=values["compute_dtype"])

    def check(original, output, ref, what):
        if getattr(ref, "bound", None) is None:
            return info.check(original, output, ref, what)
        outside = (as_bits(output) != as_bits(ref.expected)) & ~ref.touched
        assert not bool(outside.any()), f"{what}: entries changed outside the penalised rows"
        checks.assert_within_bound(output, ref.expected, ref.bound, f"{what} (division=approximate)")
    return {"reference": reference, "check": check}


def _temperature(info, values: dict) -> dict:
    if values["division"] != "approximate":
        raise ValueError("the temperature record has branches for division=ieee and approximate only")

    def reference(logits, semantics, tolerance, *, temperature):
        return temperature_reference(logits, temperature, ulps=2 if logits.dtype == torch.float32 else 1)
    return {"reference": reference}


def _gumbel(info, values: dict) -> dict:
    def reference(logits, semantics, tolerance, **args):
        return own_stream_reference(info.reference(logits, args, semantics, tolerance))
    return {"reference": reference}


def _logprobs(info, values: dict) -> dict:
    def same_output(actual, expected, what, vocab):
        if actual is None or expected is None:  # no logprobs asked
            return checks.assert_outputs_bitwise(actual, expected, what)
        checks.assert_bitwise_equal(actual.token_ids, expected.token_ids, f"{what} (token ids)")
        checks.assert_bitwise_equal(actual.ranks, expected.ranks, f"{what} (ranks)")
        summation = math.ceil(math.log2(max(vocab, 2))) * torch.finfo(torch.float32).eps
        bound = summation + 2 * ulp32(expected.logprobs)
        checks.assert_within_bound(actual.logprobs, expected.logprobs, bound,
                                   f"{what} (values, layout_invariance=summation_order)")
    return {"same_output": same_output}


def _min_p(info, values: dict) -> dict:
    """min_p_softmax's oracle branch (a sampler's own random stream needs nothing more: its
    checks use no noise of ours)."""
    if values["min_p_softmax"] == "none":
        return {}

    def reference(logits, semantics, tolerance, *, min_p, seed=None):
        dtype = torch.float32 if values["min_p_softmax"] == "fp32" else logits.dtype
        return min_p_softmax_reference(logits, min_p, softmax_dtype=dtype)
    return {"reference": reference}


BRANCHES = {"top_k_top_p": _top_k_top_p, "top_k_top_p_sample": _top_k_top_p, "penalties": _penalties,
            "temperature": _temperature, "gumbel_sample": _gumbel, "min_p": _min_p, "min_p_sample": _min_p,
            "logprobs": _logprobs}
