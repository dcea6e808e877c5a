"""Registry record for `apply_sampling_params`, the whole sampler (samplecheck.kernels.sampling_params):
every op on or off per case, in the engine's order, judged by the op records' own oracles
composed (`samplecheck.families.pipeline`)."""

from dataclasses import replace

import torch

from samplecheck.families.errors import floats, id_ends, id_range, ids
from samplecheck.families.masking import MinPCase, TopKTopPCase
from samplecheck.families.pipeline import PipelineCase, field_rejected, pipeline_record
from samplecheck.families.samplers import GumbelCase
from samplecheck.families.token_lists import LogitBiasCase
from samplecheck.families.values import TemperatureCase
from samplecheck.infos.bad_words import BAD_WORDS
from samplecheck.infos.gumbel_sample import GUMBEL
from samplecheck.infos.logit_bias import LOGIT_BIAS
from samplecheck.infos.logprobs import LOGPROBS
from samplecheck.infos.min_p import MIN_P
from samplecheck.infos.penalties import PENALTIES
from samplecheck.infos.temperature import TEMPERATURE
from samplecheck.infos.top_k_top_p import TOP_K_TOP_P
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.registry import catalog
from samplecheck.registry.matrix import register
from samplecheck.registry.records import ALL_DTYPES, Backend, Mark, RegressionExample, per_dtype


PIPELINE_ERRORS = (
    field_rejected("logprobs_mode", ValueError, r"logprobs_mode must be one of raw_logprobs, raw_logits, "
                   r"processed_logprobs, processed_logits", {"unknown logprobs mode": "raw"}, num_logprobs=1)
    + field_rejected("temperature", ValueError, r"temperature must be finite and >= 0", {
        "negative temperature": floats([0.5, -1.0])})
    + field_rejected("top_k", ValueError, r"top_k must be -1 or 0 \(top-k off\) or >= 1", {
        "top_k below -1": ids([5, -2])})
    + field_rejected("positions", ValueError, r"positions must be", {"negative position": ids([0, -1])})
    + field_rejected("num_logprobs", ValueError, r"num_logprobs", {"num_logprobs above vocab": 9})
    # The id lists of every op at both ends of their allowed ids (the penalties' lists also
    # take V as padding); the history is the bad words' here, where V is an error.
    + id_ends("allowed_token_ids", id_range("allowed_token_ids"), lambda bad: ids([[1, -1], [2, bad]]),
              reject=field_rejected)
    + id_ends("logit_bias_ids", id_range("logit_bias_ids"), lambda bad: ids([[1], [bad]]), reject=field_rejected,
              logit_bias_values=floats([[1.0], [1.0]]))
    + id_ends("stop_token_ids", id_range("stop_token_ids"), lambda bad: ids([[1], [bad]]), reject=field_rejected,
              min_tokens=ids([2, 2]), output_len=ids([0, 1]))
    + id_ends("prompt_token_ids", id_range("prompt_token_ids", ", 8"), lambda bad: ids([[1, bad], [0, -1]]), (-2, 9),
              reject=field_rejected, repetition_penalty=floats([1.2, 1.0]))
    + id_ends("bad_words", id_range("bad_words"), lambda bad: ids([[[1, 2]], [[3, bad]]]), reject=field_rejected)
    + id_ends("output_token_ids", id_range("output_token_ids"), lambda bad: ids([[1, -1], [0, bad]]),
              reject=field_rejected, bad_words=ids([[[1, 2]], [[3, -1]]]))
)

CPU_SAMPLING = Mark("skip", "each sampled row needs ~18k full pipeline runs of a repeated row: minutes per "
                    "example under the interpreter; runs on --sc-device=cuda (the ops' own sampling and exact "
                    "checks run on CPU)", test=catalog.DISTRIBUTION, device="cpu")

# Every op on, on 5 rows of V = 1019: the op records' own edge cases for bias, penalties and
# bad words; greedy rows 0 and 4 among T = 0.7, 1, 1.3; min_p, top-k and top-p on and off
# per row; seeds and positions at the int64 and 2**32 edges; top-5 logprobs.
EVERY_OP = LogitsRecipe(batch=5, vocab=1019, family="randn", scale=3.0, seed=2026)
EVERYTHING_ON = PipelineCase(
    EVERY_OP,
    (("logit_bias", LOGIT_BIAS.examples[0].case), ("penalties", PENALTIES.examples[1].case),
     ("bad_words", BAD_WORDS.examples[0].case), ("temperature", TemperatureCase(EVERY_OP, (0.0, 0.7, 1.0, 1.3))),
     ("min_p", MinPCase(EVERY_OP, (0.0, 0.05, 0.1))), ("top_k_top_p", TopKTopPCase(EVERY_OP, (50, 0, 5), (0.9, 1.0)))),
    GumbelCase(EVERY_OP, seeds=(1, 2**62, -7), positions=(0, 3, 2**33), temperature=None),
    num_logprobs=5, logprobs_mode="raw_logprobs")


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
    RegressionExample("every op on, greedy and sampled rows, raw logprobs", EVERYTHING_ON,
                      dtypes=ALL_DTYPES, layouts=("contig", "padded64")),
    RegressionExample("every op on, processed logits", replace(EVERYTHING_ON, logprobs_mode="processed_logits"),
                      dtypes=(torch.bfloat16,), layouts=("contig",)),
    RegressionExample("a row masked whole by its allowlist and a stop id, beside sampled rows", ROW_MASKED_WHOLE,
                      dtypes=ALL_DTYPES, layouts=("contig",), tests=catalog.EXACT_TESTS + (catalog.DISTRIBUTION,)),
)

SAMPLING_PARAMS = register(pipeline_record(
    (LOGIT_BIAS, PENALTIES, BAD_WORDS, TEMPERATURE, MIN_P, TOP_K_TOP_P, GUMBEL, LOGPROBS),
    name="sampling_params",
    backends=(Backend("triton", "samplecheck.kernels.sampling_params:apply_sampling_params", marks=(CPU_SAMPLING,),
                      capturable=True, guard_flag=True, batch_invariant=True),),
    tolerance=per_dtype(0.0),  # each op's own tolerance applies inside
    semantics={"order": "allowed, bias, min_tokens, penalties, bad words, temperature, min_p, top-k, top-p, "
                        "Gumbel sample, logprobs",
               "greedy": "T = 0 rows undivided, lowest argmax of the processed logits",
               "copies": "a clone in the logits' dtype only for raw logprobs/logits modes; no fp32 copy"},
    error_inputs=PIPELINE_ERRORS,
    examples=PIPELINE_REGRESSIONS,
))
