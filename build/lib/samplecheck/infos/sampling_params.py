"""Registry record for `apply_sampling_params`, the whole sampler (samplecheck.kernels.sampling_params).

A case is one set of logits plus, per op, that op's own registry case (or None: the op is
off), drawn by the op records' strategies on the same logits (`logits_recipes` is shared
within an example). The oracle is the composition of the op records' oracles, in the
engine's order:
- allowed/bias/min_tokens, penalties, bad words and temperature are exact: their oracles
  chain into the expected values before masking;
- min_p and top-k/top-p are judged on those values by their oracles; at min_p's ambiguous
  entries (a 2^-20 band) the kernel's decision, read off its output, feeds top-k/top-p;
- the sampled id must be admissible for the Gumbel oracle run on the processed logits the
  pipeline returned, with the pipeline's greedy flags (T = 0 rows: the lowest argmax);
- logprobs are checked by the logprobs record on the tensor the mode names (the raw input
  or the processed logits); `*_logits` modes must return the logit values themselves.
"""

from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from samplecheck.oracles.bad_words import bad_words_expected
from samplecheck.oracles.gumbel import gumbel_law, lowest_one_hot, noise_resolves
from samplecheck.judging import checks
from samplecheck.infos.bad_words import BAD_WORDS
from samplecheck.infos.gumbel_sample import GUMBEL, MIN_SAMPLING_T, GumbelCase
from samplecheck.infos.logit_bias import LOGIT_BIAS, LogitBiasCase
from samplecheck.infos.logprobs import LOGPROBS
from samplecheck.infos.min_p import MIN_P, MinPCase
from samplecheck.infos.penalties import PENALTIES
from samplecheck.infos.temperature import TEMPERATURE, TemperatureCase, temperature_cases
from samplecheck.infos.top_k_top_p import TOP_K_TOP_P, TopKTopPCase
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.harness.registry import ALL_DTYPES, EXACT_TESTS, Backend, ErrorInput, KernelInfo, Mark, RegressionExample, register, zeros_on
from samplecheck.inputs.strategies import Budget, logits_recipes
from samplecheck.kernels.sampling_params import SamplingBatch

LOGPROBS_MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")
NUM_LOGPROBS = (None, 0, 1, 5, -1)
# Ops in the engine's order, each with the record whose case and oracle it reuses.
VALUE_OPS = ("logit_bias", "penalties", "bad_words", "temperature")
# The op records, held here (not looked up in the registry, which --mutant and
# --backend-only prune to the kernels under test).
OPS = {info.name: info for info in (LOGIT_BIAS, PENALTIES, BAD_WORDS, TEMPERATURE, MIN_P, TOP_K_TOP_P, GUMBEL,
                                    LOGPROBS)}
ARG_NAMES = {"k": "top_k", "p": "top_p"}  # top_k_top_p record -> SamplingBatch fields


@dataclass(frozen=True)
class PipelineCase:
    logits: LogitsRecipe
    ops: tuple[tuple[str, object], ...]  # (record name, that record's case) for the ops that are on
    sampling: object  # a gumbel_sample case: seeds and positions
    num_logprobs: int | None
    logprobs_mode: str


@st.composite
def pipeline_cases(draw, budget: Budget) -> PipelineCase:
    recipe = draw(logits_recipes(budget))
    strategies = {name: OPS[name].cases(budget) for name in ("logit_bias", "penalties", "bad_words", "min_p",
                                                                  "top_k_top_p")}
    strategies["temperature"] = temperature_cases(budget, extremes=False)
    ops = tuple((name, case) for name, strategy in strategies.items()
                if (case := draw(st.none() | strategy, label=name)) is not None)
    return PipelineCase(recipe, ops, draw(OPS["gumbel_sample"].cases(budget), label="sampling"),
                        draw(st.sampled_from(NUM_LOGPROBS)), draw(st.sampled_from(LOGPROBS_MODES)))


def pipeline_args(case: PipelineCase, logits: torch.Tensor) -> dict:
    """One SamplingBatch: every op's own arguments under the pipeline's field names; bad
    words' output history (built to match its words) serves the penalties too."""

    fields = {}
    for name, op_case in sorted(case.ops, key=lambda op: op[0] == "bad_words"):
        for arg, value in OPS[name].make_args(op_case, logits).items():
            fields[ARG_NAMES.get(arg, arg)] = value
    sampling = OPS["gumbel_sample"].make_args(case.sampling, logits)
    num_logprobs = case.num_logprobs if case.num_logprobs is None else min(case.num_logprobs, logits.size(1))
    return {"params": SamplingBatch(seeds=sampling["seeds"], positions=sampling["positions"],
                                    num_logprobs=num_logprobs, logprobs_mode=case.logprobs_mode, **fields)}


def _op_args(name: str, params) -> dict:
    """The keyword arguments of op record `name` taken from a SamplingBatch (None when off)."""
    wanted = {"logit_bias": ("allowed_token_ids", "logit_bias_ids", "logit_bias_values", "stop_token_ids",
                             "min_tokens", "output_len"),
              "penalties": ("prompt_token_ids", "output_token_ids", "repetition_penalty", "frequency_penalty",
                            "presence_penalty"),
              "bad_words": ("bad_words", "output_token_ids"),
              "temperature": ("temperature",), "min_p": ("min_p",), "top_k_top_p": ("k", "p")}[name]
    args = {arg: getattr(params, ARG_NAMES.get(arg, arg)) for arg in wanted}
    gate = {"penalties": "repetition_penalty", "bad_words": "bad_words"}.get(name)
    return None if gate and args[gate] is None else args


def _reference(name: str, x: torch.Tensor, args: dict):
    info = OPS[name]
    return info.reference(x, info.semantics, info.tolerance[x.dtype], **args)


def _expected_values(name: str, x: torch.Tensor, reference) -> torch.Tensor:
    """The exact output of a value-changing op's oracle, in the logits' dtype."""
    if name == "logit_bias":
        return reference
    if name == "bad_words":
        return bad_words_expected(x, reference)
    return reference.expected


@dataclass(frozen=True)
class PipelineReference:
    """`values`: the exact logits after the value-changing ops (before min_p, top-k/top-p);
    `params`: the batch, for the checks that need the pipeline's own output."""

    values: torch.Tensor
    params: object


def pipeline_ref(logits, semantics, tolerance, *, params):
    x = logits.clone()
    for name in VALUE_OPS:
        args = _op_args(name, params)
        if args is not None:
            x = _expected_values(name, x, _reference(name, x, args))
    return PipelineReference(x, params)


def _sampler_args(params) -> dict:
    """The Gumbel sampler's arguments inside the pipeline: the temperature is already applied
    to the processed logits, so only the greedy flags remain (T = 0 -> 0, else 1)."""
    greedy = None if params.temperature is None else (params.temperature != 0).to(torch.float32)
    return {"seeds": params.seeds, "positions": params.positions, "temperature": greedy}


def pipeline_check(original, output, reference: PipelineReference, what):
    """Rows whose exact values before masking hold +inf or NaN (a bias or penalty that
    overflows the dtype) are outside min_p's, top-p's and logprobs' specification: there only
    the values (unchanged or -inf) and the sampled id are checked."""
    sampled, processed, logprobs = output
    params, values = reference.params, reference.values
    specified = ~((values == float("inf")) | values.isnan()).any(dim=-1)
    # min_p on the exact values; its ambiguous entries as the kernel decided them.
    by_min_p = _reference("min_p", values, _op_args("min_p", params))
    survivors = by_min_p.kept | (by_min_p.ambiguous & (processed != float("-inf")))
    masked = values.masked_fill(~survivors, float("-inf"))
    by_top = _reference("top_k_top_p", masked, _op_args("top_k_top_p", params))
    kept = (by_top.kept & survivors) | (values == float("-inf"))
    open_ids = by_min_p.ambiguous | by_top.ambiguous | ~specified[:, None]
    checks.assert_masked_like(values, processed, kept, open_ids, f"{what}: processed logits vs the composed oracles")
    OPS["gumbel_sample"].check(processed, sampled, _reference("gumbel_sample", processed, _sampler_args(params)),
                               f"{what}: sampled ids")
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
    expected = _reference("logprobs", source, {"sampled": sampled[rows], "num_logprobs": params.num_logprobs})
    OPS["logprobs"].check(source, logprobs, expected, f"{what}: logprobs ({params.logprobs_mode}) of rows {rows}")


def _call(**fields):
    """make(device): a 2 x 8 call with the given SamplingBatch fields (tensors built on the device)."""
    def make(device):

        zeros = torch.zeros(2, dtype=torch.int64, device=device)
        built = {"seeds": zeros, "positions": zeros, **{k: v(device) if callable(v) else v for k, v in fields.items()}}
        return (zeros_on(2, 8)(device),), {"params": SamplingBatch(**built)}
    return make


PIPELINE_ERRORS = (
    ErrorInput("unknown logprobs mode", _call(num_logprobs=1, logprobs_mode="raw"), ValueError,
               r"logprobs_mode must be one of raw_logprobs, raw_logits, processed_logprobs, processed_logits"),
    ErrorInput("negative temperature", _call(temperature=lambda d: torch.tensor([0.5, -1.0], device=d)), ValueError,
               r"temperature must be finite and >= 0"),
    ErrorInput("top_k below -1", _call(top_k=lambda d: torch.tensor([5, -2], device=d)), ValueError,
               r"k must be -1 or 0 \(top-k off\) or >= 1"),
    ErrorInput("negative position", _call(positions=lambda d: torch.tensor([0, -1], device=d)), ValueError,
               r"positions must be"),
    ErrorInput("num_logprobs above vocab", _call(num_logprobs=9), ValueError, r"num_logprobs"),
)


def _memory_args(params, logits) -> dict:
    """Each op record's arguments for its own extra_memory (ops that are off left out)."""
    batch = logits.size(0)
    args = {name: _op_args(name, params) for name in ("penalties", "bad_words", "top_k_top_p")}
    args["gumbel_sample"] = {}
    args["logprobs"] = {"sampled": torch.zeros(batch, dtype=torch.int64), "num_logprobs": params.num_logprobs}
    return {name: a for name, a in args.items() if a is not None and OPS[name].extra_memory is not None}


def pipeline_memory(logits, args):
    """The raw clone (only in raw modes with logprobs requested: B * V in the logits' dtype),
    the logits modes' gather, and the sum of every op's own stated bound (an upper bound: the
    ops run one after the other); with num_logprobs >= 0 and no raw clone, far below an fp32
    copy (4 * B * V)."""
    params = args["params"]
    raw = logits.numel() * logits.element_size() if (
        params.num_logprobs is not None and params.logprobs_mode.startswith("raw")) else 0
    return raw + _logits_mode_gather(logits, params) + sum(
        OPS[name].extra_memory(logits, a) for name, a in _memory_args(params, logits).items())


def _logits_mode_gather(logits, params) -> int:
    """raw_logits / processed_logits: the logits gathered at the [B, n + 1] output ids, in
    the logits' dtype and then as fp32 (n = V for num_logprobs = -1, the requested output)."""
    if params.num_logprobs is None or not params.logprobs_mode.endswith("logits"):
        return 0
    batch, vocab = logits.shape
    n = vocab if params.num_logprobs == -1 else params.num_logprobs
    return batch * (n + 1) * (logits.element_size() + 4)


def pipeline_law(original, reference: PipelineReference, **_):
    """The law of the sampled id: softmax of the exact processed values over the finite
    entries both masking oracles keep for certain; finite entries in either oracle's
    ambiguity band may be drawn but are not required, -inf entries never. One-hot at the
    lowest maximum in greedy rows, in rows with a +inf processed value (an overflowing bias
    or penalty: the sampler takes the lowest +inf id) and in rows with no finite one (the
    allowlist and the stop ids can mask a whole row: the sampler then returns id 0). NaN (no
    law claimed) in sampled rows whose values are too large for the sampler's fp32 noise to
    resolve (`samplecheck.oracles.gumbel.noise_resolves`: a huge bias, or a repetition penalty far from 1)."""
    params, values = reference.params, reference.values
    by_min_p = _reference("min_p", values, _op_args("min_p", params))
    open_min_p = by_min_p.kept | by_min_p.ambiguous
    by_top = _reference("top_k_top_p", values.masked_fill(~open_min_p, float("-inf")), _op_args("top_k_top_p", params))
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


def pipeline_induced_law(output, args) -> torch.Tensor:
    """The law the pipeline commits to: the Gumbel oracle's law of the processed logits it
    returned, with its greedy flags."""
    return gumbel_law(_reference("gumbel_sample", output.processed_logits, _sampler_args(args["params"])))


# Rows per call of the repeated-rows sampler.
SAMPLE_CALL_ELEMENTS = 2**24


def pipeline_sample(call, logits, args, rows: int, n: int, seed: int) -> torch.Tensor:
    """n draws per row: the row repeated (a fresh copy per call, the pipeline works in place)
    with its parameters, seeds seed + i, logprobs off."""
    from dataclasses import fields, replace

    params = args["params"]
    batch, vocab = logits.shape
    per_call = max(1, min(n, SAMPLE_CALL_ELEMENTS // max(vocab, 1)))
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


def pipeline_distribution_cases(budget: Budget):
    """Binnable rows (V <= 4096) and temperatures the Gumbel sampler's law covers (0 or
    >= MIN_SAMPLING_T; a tiny T makes the scores so large that fp32 coarsens the noise, and
    tied logits then favour the lowest id)."""
    def sampled_law_holds(case):
        temperature = dict(case.ops).get("temperature")
        return temperature is None or all(t == 0 or t >= MIN_SAMPLING_T for t in temperature.temperature)
    return pipeline_cases(budget).filter(lambda case: case.logits.vocab <= 4096 and sampled_law_holds(case))


CPU_SAMPLING = Mark("skip", "each sampled row needs ~18k full pipeline runs of a repeated row: minutes per "
                    "example under the interpreter; runs on --device=cuda (the ops' own sampling and exact "
                    "checks run on CPU)", test="test_distribution", device="cpu")


def everything_on(mode: str) -> PipelineCase:
    """Every op on, on 5 rows of V = 1019: the op records' own edge cases for bias, penalties
    and bad words; greedy rows 0 and 4 among T = 0.7, 1, 1.3; min_p, top-k and top-p on and
    off per row; seeds and positions at the int64 and 2**32 edges; top-5 logprobs."""
    recipe = LogitsRecipe(batch=5, vocab=1019, family="randn", scale=3.0, seed=2026)
    ops = (("logit_bias", LOGIT_BIAS.examples[0].case), ("penalties", PENALTIES.examples[1].case),
           ("bad_words", BAD_WORDS.examples[0].case), ("temperature", TemperatureCase(recipe, (0.0, 0.7, 1.0, 1.3))),
           ("min_p", MinPCase(recipe, (0.0, 0.05, 0.1))), ("top_k_top_p", TopKTopPCase(recipe, (50, 0, 5), (0.9, 1.0))))
    sampling = GumbelCase(recipe, seeds=(1, 2**62, -7), positions=(0, 3, 2**33), temperature=None)
    return PipelineCase(recipe, ops, sampling, num_logprobs=5, logprobs_mode=mode)


# Greedy rows next to sampled ones on nearly flat logits, nothing else on: a sampled greedy
# row picks its argmax with probability ~1/V.
NEAR_FLAT = LogitsRecipe(batch=4, vocab=1019, family="randn", scale=0.1, seed=5404)
GREEDY_BESIDE_SAMPLED = PipelineCase(
    NEAR_FLAT, (("temperature", TemperatureCase(NEAR_FLAT, (0.0, 1.0))),),
    GumbelCase(NEAR_FLAT, seeds=(11, 12, 13), positions=(0,), temperature=None), num_logprobs=None,
    logprobs_mode="raw_logprobs")

# Row 1 allows only id 3, an active stop id: the whole row ends -inf and its law is id 0,
# next to sampled rows with half their entries -inf.
HALF_MASKED = LogitsRecipe(batch=4, vocab=1019, family="randn", scale=1.0, neg_inf_fraction=0.5, seed=9)
ROW_MASKED_WHOLE = PipelineCase(
    HALF_MASKED, (("logit_bias", LogitBiasCase(HALF_MASKED, allowed=((), (3,)), bias=None,
                                                min_tokens=(((), 0, 0), ((3,), 1, 0)))),),
    GumbelCase(HALF_MASKED, seeds=(21, 22), positions=(0,), temperature=None), num_logprobs=None,
    logprobs_mode="raw_logprobs")

PIPELINE_REGRESSIONS = (
    RegressionExample("greedy rows beside sampled rows, near-flat logits", GREEDY_BESIDE_SAMPLED,
                      dtypes=ALL_DTYPES, layouts=("contig",)),
    RegressionExample("every op on, greedy and sampled rows, raw logprobs", everything_on("raw_logprobs"),
                      dtypes=ALL_DTYPES, layouts=("contig", "padded64")),
    RegressionExample("every op on, processed logits", everything_on("processed_logits"),
                      dtypes=(torch.bfloat16,), layouts=("contig",)),
    RegressionExample("a row masked whole by its allowlist and a stop id, beside sampled rows", ROW_MASKED_WHOLE,
                      dtypes=ALL_DTYPES, layouts=("contig",), tests=EXACT_TESTS + ("test_distribution",)),
)

SAMPLING_PARAMS = register(KernelInfo(
    name="sampling_params",
    backends=(Backend("triton", "samplecheck.kernels.sampling_params:apply_sampling_params", marks=(CPU_SAMPLING,)),),
    cases=pipeline_cases,
    make_args=pipeline_args,
    reference=pipeline_ref,
    check=pipeline_check,
    dtypes=ALL_DTYPES,
    tolerance={dtype: 0.0 for dtype in ALL_DTYPES},  # each op's own tolerance applies inside
    semantics={"order": "allowed, bias, min_tokens, penalties, bad words, temperature, min_p, top-k, top-p, "
                        "Gumbel sample, logprobs",
               "greedy": "T = 0 rows undivided, lowest argmax of the processed logits",
               "copies": "a clone in the logits' dtype only for raw logprobs/logits modes; no fp32 copy"},
    error_inputs=PIPELINE_ERRORS,
    examples=PIPELINE_REGRESSIONS,
    law=pipeline_law,
    distribution_cases=pipeline_distribution_cases,
    sample=pipeline_sample,
    induced_law=pipeline_induced_law,
    extra_memory=pipeline_memory,
))
