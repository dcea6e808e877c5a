"""The whole-sampler family (`apply_sampling_params`): a record composed of the op records.

A case is one set of logits plus, per op, that op's own registry case (or None: the op is
off), drawn by the op records' strategies on the same logits (`logits_recipes` is shared
within an example). The oracle is the composition of the op records' oracles, in the
engine's order:
- allowed/bias/min_tokens, penalties, bad words and temperature are exact: each value op's
  `expected` output chains into the values before masking;
- min_p and top-k/top-p are judged on those values by their oracles; at min_p's ambiguous
  entries (a 2^-20 band) the kernel's decision, read off its output, feeds top-k/top-p;
- the sampled id must be admissible for the Gumbel oracle run on the processed logits the
  pipeline returned, with the pipeline's greedy flags (T = 0 rows: the lowest argmax);
- logprobs are checked by the logprobs record on the tensor the mode names (the raw input
  or the processed logits); `*_logits` modes must return the logit values themselves.

`Pipeline(ops)` holds the op records themselves (not looked up in the registry, which
--sc-mutant and --sc-backend-only prune to the kernels under test); `pipeline_record` makes the
KernelInfo of its behaviour.
"""

import itertools
from dataclasses import dataclass, fields, replace

import torch
from hypothesis import event, strategies as st

from samplecheck.families.errors import built, call
from samplecheck.families.samplers import MIN_SAMPLING_T
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.inputs.strategies import Budget, logits_recipes
from samplecheck.kernels.sampling_params import PENALTY_DEFAULTS, SamplingBatch
from samplecheck.oracles.gumbel import gumbel_law, lowest_one_hot, noise_resolves
from samplecheck.registry import checks
from samplecheck.registry.records import ErrorInput, KernelInfo

LOGPROBS_MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")
NUM_LOGPROBS = (None, 0, 1, 5, -1)
# The value ops in the engine's order; then min_p, top-k/top-p, the Gumbel sampler, logprobs.
VALUE_OPS = ("logit_bias", "penalties", "bad_words", "temperature")
MASK_OPS = ("min_p", "top_k_top_p")
# Every pair of ops that can change a row, in the engine's order (op interactions).
OP_PAIRS = tuple(itertools.combinations(VALUE_OPS + MASK_OPS, 2))
ARG_NAMES = {"k": "top_k", "p": "top_p"}  # top_k_top_p record -> SamplingBatch fields
# Each op's keyword arguments, as SamplingBatch carries them (under ARG_NAMES' names).
OP_ARGS = {"logit_bias": ("allowed_token_ids", "logit_bias_ids", "logit_bias_values", "stop_token_ids",
                          "min_tokens", "output_len"),
           "penalties": ("prompt_token_ids", "output_token_ids", "repetition_penalty", "frequency_penalty",
                         "presence_penalty"),
           "bad_words": ("bad_words", "output_token_ids"),
           "temperature": ("temperature",), "min_p": ("min_p",), "top_k_top_p": ("k", "p")}
# An op is off when every one of its gate fields is None; in a partly given group a penalty
# left out is off (PENALTY_DEFAULTS, the sampler's documented defaults) and a missing id list empty.
OP_GATES = {"penalties": tuple(PENALTY_DEFAULTS), "bad_words": ("bad_words",)}
SAMPLE_CALL_ELEMENTS = 2**24  # elements per call of the repeated-rows sampler


@dataclass(frozen=True)
class PipelineCase:
    logits: LogitsRecipe
    ops: tuple[tuple[str, object], ...]  # (record name, that record's case) for the ops that are on
    sampling: object  # a gumbel_sample case: seeds and positions
    num_logprobs: int | None
    logprobs_mode: str


@dataclass(frozen=True)
class PipelineReference:
    """`values`: the exact logits after the value-changing ops (before min_p, top-k/top-p);
    `params`: the batch, for the checks that need the pipeline's own output; `changed`: per
    value op that is on, bool [B], the rows it changed."""

    values: torch.Tensor
    params: object
    changed: dict


def _sampler_args(params) -> dict:
    """The Gumbel sampler's arguments inside the pipeline: the temperature is already applied
    to the processed logits, so only the greedy flags remain (T = 0 -> 0, else 1)."""
    greedy = None if params.temperature is None else (params.temperature != 0).to(torch.float32)
    return {"seeds": params.seeds, "positions": params.positions, "temperature": greedy}


def _logits_mode_gather(logits, params) -> int:
    """raw_logits / processed_logits: the logits gathered at the [B, n + 1] output ids, in
    the logits' dtype and then as fp32 (n = V for num_logprobs = -1, the requested output)."""
    if params.num_logprobs is None or not params.logprobs_mode.endswith("logits"):
        return 0
    batch, vocab = logits.shape
    n = vocab if params.num_logprobs == -1 else params.num_logprobs
    return batch * (n + 1) * (logits.element_size() + 4)


@dataclass(frozen=True, eq=False)
class Pipeline:
    """The pipeline's behaviour over its op records, `ops` by record name."""

    ops: dict

    def cases(self, budget: Budget):
        return _pipeline_cases(self.ops, budget)

    def distribution_cases(self, budget: Budget):
        """Binnable rows (V <= 4096) and temperatures the Gumbel sampler's law covers (0 or
        >= MIN_SAMPLING_T; a tiny T makes the scores so large that fp32 coarsens the noise,
        and tied logits then favour the lowest id)."""
        def sampled_law_holds(case):
            temperature = dict(case.ops).get("temperature")
            return temperature is None or all(t == 0 or t >= MIN_SAMPLING_T for t in temperature.temperature)
        return self.cases(budget).filter(lambda case: case.logits.vocab <= 4096 and sampled_law_holds(case))

    def off_encodings(self) -> tuple:
        """Every op's off encodings, as fields of the SamplingBatch argument `params`."""
        return tuple(dict.fromkeys(off.renamed(ARG_NAMES.get(off.param, off.param), "params")
                                   for name in sorted(self.ops) for off in self.ops[name].off_encodings))

    def make_args(self, case: PipelineCase, logits: torch.Tensor) -> dict:
        """One SamplingBatch: every op's own arguments under the pipeline's field names; bad
        words' output history (built to match its words) serves the penalties too."""
        batch_fields = {}
        for name, op_case in sorted(case.ops, key=lambda op: op[0] == "bad_words"):
            for arg, value in self.ops[name].make_args(op_case, logits).items():
                batch_fields[ARG_NAMES.get(arg, arg)] = value
        sampling = self.ops["gumbel_sample"].make_args(case.sampling, logits)
        num_logprobs = case.num_logprobs if case.num_logprobs is None else min(case.num_logprobs, logits.size(1))
        return {"params": SamplingBatch(seeds=sampling["seeds"], positions=sampling["positions"],
                                        num_logprobs=num_logprobs, logprobs_mode=case.logprobs_mode, **batch_fields)}

    def _verdict(self, name: str, x: torch.Tensor, params):
        """Op record `name`'s oracle on `x`, its arguments taken from the batch."""
        return self.ops[name].verdict(x, _op_args(name, params))

    def reference(self, logits, *, params) -> PipelineReference:
        x, changed = logits.clone(), {}
        for name in VALUE_OPS:
            if _op_args(name, params) is not None:
                after = self.ops[name].expected(x, self._verdict(name, x, params))
                changed[name] = ((after != x) & ~(after.isnan() & x.isnan())).any(dim=-1)
                x = after
        return PipelineReference(x, params, changed)

    def binding(self, reference: PipelineReference) -> dict[str, torch.Tensor]:
        """Per op that is on, bool [B]: the rows it changes in the engine's order (a value op
        changes a value; min_p or top-k/top-p masks a finite entry)."""
        rows, params = dict(reference.changed), reference.params
        x = reference.values
        finite = x > float("-inf")
        for name in MASK_OPS:
            if _op_args(name, params) is not None:
                kept = self._verdict(name, x, params).kept
                rows[name] = (finite & ~kept).any(dim=-1)
                x = x.masked_fill(~kept, float("-inf"))
                finite &= kept
        return rows

    def targets(self, original, reference: PipelineReference) -> dict[str, float]:
        """Steers long runs towards interactions: the most ops binding in one row, and the
        op pairs binding together in some row (each also an `event`)."""
        binding = self.binding(reference)
        pairs = binding_pairs(binding)
        for pair in sorted(pairs):
            event(f"ops binding together: {' + '.join(pair)}")
        most = int(sum(rows.long() for rows in binding.values()).max()) if binding else 0
        return {"ops binding in one row": float(most), "op pairs binding together": float(len(pairs))}

    def check(self, original, output, reference: PipelineReference, what):
        """Rows whose exact values before masking hold +inf or NaN (a bias or penalty that
        overflows the dtype) are outside min_p's, top-p's and logprobs' specification: there
        only the values (unchanged or -inf) and the sampled id are checked. A NaN among the values
        is matched by any NaN (the value ops' IEEE arithmetic, NaN / T or NaN + b, fixes no
        payload)."""
        sampled, processed, logprobs = output
        params, values = reference.params, reference.values
        specified = ~((values == float("inf")) | values.isnan()).any(dim=-1)
        values = torch.where(values.isnan() & processed.isnan(), processed, values)  # any NaN (IEEE)
        # min_p on the exact values; its ambiguous entries as the kernel decided them.
        by_min_p = self._verdict("min_p", values, params)
        survivors = by_min_p.kept | (by_min_p.ambiguous & (processed != float("-inf")))
        by_top = self._verdict("top_k_top_p", values.masked_fill(~survivors, float("-inf")), params)
        kept = (by_top.kept & survivors) | (values == float("-inf"))
        open_ids = by_min_p.ambiguous | by_top.ambiguous | ~specified[:, None]
        checks.assert_masked_like(values, processed, kept, open_ids, f"{what}: processed logits vs the composed oracles")
        gumbel = self.ops["gumbel_sample"]
        gumbel.check(processed, sampled, gumbel.verdict(processed, _sampler_args(params)), f"{what}: sampled ids")
        if logprobs is None and params.num_logprobs is None:
            return
        rows = specified.nonzero().flatten().tolist()
        source = (original if params.logprobs_mode.startswith("raw") else processed)[rows]
        logprobs = checks.output_rows(logprobs, rows)
        if params.logprobs_mode.endswith("logits"):
            expected = source.gather(1, logprobs.token_ids).to(torch.float32)
            checks.assert_bitwise_equal(logprobs.logprobs, expected, f"{what}: {params.logprobs_mode} values")
            logprobs = logprobs._replace(logprobs=torch.log_softmax(source.double(), dim=-1).gather(
                1, logprobs.token_ids).to(torch.float32))
        record = self.ops["logprobs"]
        expected = record.verdict(source, {"sampled": sampled[rows], "num_logprobs": params.num_logprobs})
        record.check(source, logprobs, expected, f"{what}: logprobs ({params.logprobs_mode}) of rows {rows}")

    def law(self, original, reference: PipelineReference, **_):
        """The law of the sampled id: softmax of the exact processed values over the finite
        entries both masking oracles keep for certain; finite entries in either oracle's
        ambiguity band may be drawn but are not required, -inf entries never. One-hot at the
        lowest maximum in greedy rows, in rows with a +inf processed value (an overflowing
        bias or penalty: the sampler takes the lowest +inf id) and in rows with no finite one
        (the allowlist and the stop ids can mask a whole row: the sampler then returns id 0).
        NaN (no law claimed) in sampled rows whose values are too large for the sampler's fp32
        noise to resolve (`samplecheck.oracles.gumbel.noise_resolves`: a huge bias, or a
        repetition penalty far from 1)."""
        params, values = reference.params, reference.values
        by_min_p = self._verdict("min_p", values, params)
        open_min_p = by_min_p.kept | by_min_p.ambiguous
        by_top = self._verdict("top_k_top_p", values.masked_fill(~open_min_p, float("-inf")), params)
        x = values.double()
        finite = x > float("-inf")
        support = finite & open_min_p & (by_top.kept | by_top.ambiguous)
        required = finite & by_min_p.kept & ~by_min_p.ambiguous & by_top.kept & ~by_top.ambiguous
        single = ~finite.any(dim=-1) | (x == float("inf")).any(dim=-1)
        if params.temperature is not None:
            single |= params.temperature == 0
        top = lowest_one_hot(x == x.amax(dim=-1, keepdim=True))
        support = torch.where(single[:, None], top, support)
        required = torch.where(single[:, None], top, required)
        probs = torch.softmax(x.masked_fill(~required, float("-inf")), dim=-1)
        law = torch.where(single[:, None], top.double(), probs.masked_fill(~noise_resolves(x)[:, None], float("nan")))
        return law, support, required

    def induced_law(self, output, args) -> torch.Tensor:
        """The law the pipeline commits to: the Gumbel oracle's law of the processed logits
        it returned, with its greedy flags."""
        gumbel = self.ops["gumbel_sample"]
        return gumbel_law(gumbel.verdict(output.processed_logits, _sampler_args(args["params"])))

    def sample(self, call, logits, args, rows: int, n: int, seed: int) -> torch.Tensor:
        """n draws per row: the row repeated (a fresh copy per call, the pipeline works in
        place) with its parameters, seeds seed + i, logprobs off."""
        params = args["params"]
        per_call = max(1, min(n, SAMPLE_CALL_ELEMENTS // max(logits.size(1), 1)))
        draws = []
        for row in range(rows):
            taken, out = 0, []
            while taken < n:
                m = min(per_call, n - taken)
                index = torch.full((m,), row, dtype=torch.int64, device=logits.device)
                repeated = {f.name: getattr(params, f.name).index_select(0, index) for f in fields(params)
                            if isinstance(getattr(params, f.name), torch.Tensor)}
                repeated["seeds"] = seed + taken + torch.arange(m, device=logits.device)
                batch_params = replace(params, **repeated, num_logprobs=None)
                out.append(call(logits.index_select(0, index), {"params": batch_params}).sampled)
                taken += m
            draws.append(torch.cat(out))
        return torch.stack(draws)

    def memory(self, logits, args):
        """The raw clone (only in raw modes with logprobs requested: B * V in the logits'
        dtype), the logits modes' gather, and the sum of every op's own stated bound (an
        upper bound: the ops run one after the other); with num_logprobs >= 0 and no raw
        clone, far below an fp32 copy (4 * B * V)."""
        params = args["params"]
        raw = logits.numel() * logits.element_size() if (
            params.num_logprobs is not None and params.logprobs_mode.startswith("raw")) else 0
        op_args = {name: _op_args(name, params) for name in ("penalties", "bad_words", "top_k_top_p")}
        op_args["gumbel_sample"] = {}
        op_args["logprobs"] = {"sampled": torch.zeros(logits.size(0), dtype=torch.int64),
                               "num_logprobs": params.num_logprobs}
        return raw + _logits_mode_gather(logits, params) + sum(
            self.ops[name].extra_memory(logits, a) for name, a in op_args.items()
            if a is not None and self.ops[name].extra_memory is not None)


def binding_pairs(binding: dict[str, torch.Tensor]) -> set[tuple[str, str]]:
    """The op pairs (of OP_PAIRS) that bind together in at least one row."""
    return {(a, b) for a, b in OP_PAIRS if a in binding and b in binding and bool((binding[a] & binding[b]).any())}


def _op_args(name: str, params) -> dict | None:
    """The keyword arguments of op record `name` taken from a SamplingBatch (None when off)."""
    args = {arg: getattr(params, ARG_NAMES.get(arg, arg)) for arg in OP_ARGS[name]}
    gate = OP_GATES.get(name, ())
    if gate and all(args[field] is None for field in gate):
        return None
    rows, device = params.seeds.size(0), params.seeds.device
    for field, value in args.items():
        if value is None and field in PENALTY_DEFAULTS:
            args[field] = torch.full((rows,), PENALTY_DEFAULTS[field], dtype=torch.float32, device=device)
        elif value is None and field.endswith("token_ids") and gate:
            args[field] = torch.empty((rows, 0), dtype=torch.int64, device=device)
    return args


@st.composite
def _pipeline_cases(draw, ops: dict, budget: Budget) -> PipelineCase:
    recipe = draw(logits_recipes(budget))
    strategies = {name: ops[name].cases(budget) for name in ("logit_bias", "penalties", "bad_words", "min_p",
                                                             "top_k_top_p")}
    strategies["temperature"] = ops["temperature"].cases(budget, extremes=False)
    # A pair of ops on for sure (or none), each drawn where it binds (`_binding`; top-k and
    # top-p both, since their order interacts too): every pair gets cases where both bind. In
    # half of those cases the rows are made bindable too: at most half -inf, and neither flat nor
    # peaked (one dominant token is the whole nucleus of every filter).
    # The other ops are on in a quarter of the focus cases' draws (half without a focus), so
    # that the pair is often the only thing binding.
    focus = draw(st.sampled_from(((),) + OP_PAIRS), label="ops on together")
    maybe = (lambda s: st.none() | st.none() | st.none() | s) if focus else (lambda s: st.none() | s)
    chosen = tuple((name, case) for name, strategy in strategies.items()
                   if (case := draw(_binding(name, strategy) if name in focus else maybe(strategy),
                                    label=name)) is not None)
    if focus and draw(st.booleans(), label="bindable rows"):
        recipe = replace(recipe, family="randn" if recipe.family in ("flat", "peaked") else recipe.family,
                         neg_inf_fraction=min(recipe.neg_inf_fraction, 0.5))
    return PipelineCase(recipe, chosen, draw(ops["gumbel_sample"].cases(budget), label="sampling"),
                        draw(st.sampled_from(NUM_LOGPROBS)), draw(st.sampled_from(LOGPROBS_MODES)))


# A focus op's per-row values where it binds, away from the edges where it is a no-op or
# leaves one token; per field: (binding values, off value). Half of the pools also hold the off
# value at a drawn place: an off row beside binding rows is what the off-encoding property
# needs. Ops that bind whenever they are on (ids, biases, penalties) are not listed.
BINDING_VALUES = {
    "top_k_top_p": lambda vocab: {"k": (st.integers(2, max(vocab - 1, 2)), 0), "p": (st.floats(0.2, 0.95), 1.0)},
    "min_p": lambda vocab: {"min_p": (st.floats(2**-7, 0.5, width=32), 0.0)},
    "temperature": lambda vocab: {"temperature": (st.floats(0.25, 4.0, width=32).filter(lambda t: t != 1.0), 1.0)},
}


@st.composite
def _binding(draw, name: str, strategy):
    """A case of op `name` (from `strategy`) with its per-row pools redrawn from BINDING_VALUES."""
    case = draw(strategy)
    values = BINDING_VALUES.get(name)
    if values is None:
        return case
    pools = {}
    for field, (binding, off) in values(case.logits.vocab).items():
        pool = tuple(draw(st.lists(binding, min_size=1, max_size=3), label=f"{name} {field}"))
        if draw(st.booleans(), label=f"{name} {field} off in some rows"):
            at = draw(st.integers(0, len(pool)), label=f"{name} {field} off at")
            pool = pool[:at] + (off,) + pool[at:]
        pools[field] = pool
    return replace(case, **pools)


def batch(**fields):
    """A SamplingBatch argument of an error input: two rows, seeds and positions 0, and
    `fields` (each `built` on the device)."""
    def make(device):
        zeros = torch.zeros(2, dtype=torch.int64, device=device)
        return SamplingBatch(**{"seeds": zeros, "positions": zeros,
                                **{name: built(value, device) for name, value in fields.items()}})
    return make


def field_rejected(field: str, error: type[Exception], match: str, bad: dict, **valid) -> tuple[ErrorInput, ...]:
    """`rejected` for the sampler: one ErrorInput per entry of `bad` (description -> the bad
    value of SamplingBatch `field`), each a call with params = a `batch` of the `valid`
    fields and that one; the error is about `field`."""
    return tuple(ErrorInput(description, call(params=batch(**{**valid, field: value})), error, match,
                            argument=field) for description, value in bad.items())


@dataclass(frozen=True, kw_only=True)
class PipelineInfo(KernelInfo):
    """The record of the whole sampler, with its `pipeline` (e.g. for `Pipeline.binding`)."""

    pipeline: Pipeline


def pipeline_record(records, **data) -> PipelineInfo:
    """The record of the pipeline over the op `records`; `data` is the record's own
    (name, backends, tolerance, semantics, error inputs, examples)."""
    pipeline = Pipeline({info.name: info for info in records})
    return PipelineInfo(pipeline=pipeline, cases=pipeline.cases, make_args=pipeline.make_args, reference=pipeline.reference,
                      check=pipeline.check, law=pipeline.law, distribution_cases=pipeline.distribution_cases,
                      sample=pipeline.sample, induced_law=pipeline.induced_law, extra_memory=pipeline.memory,
                      off_encodings=pipeline.off_encodings(), targets=pipeline.targets, **data)
