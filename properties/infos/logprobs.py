"""Registry record for logprobs (sampled token + top-k / whole-vocab log_softmax, not in place)."""

import torch

from samplecheck.families.errors import call, dtype_message, floats, ids, logits_errors, rejected, row_shape
from samplecheck.families.logprobs import LogprobsCase, logprobs_args, logprobs_cases, logprobs_check, logprobs_memory
from samplecheck.registry.matrix import register
from samplecheck.registry.records import (ALL_DTYPES, Backend, ErrorInput, KernelInfo, Oracle, RegressionExample,
                                          per_dtype)
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.kernels.logprobs import scratch_bytes
from samplecheck.oracles.logprobs import logprobs_reference
from samplecheck.registry.layouts import LAYOUTS

VALID = {"sampled": ids([1, 2]), "num_logprobs": 2}
N_RANGE = r"num_logprobs must be None, -1 \(whole vocab\), 0 \(sampled token only\) or in \[1, vocab = 8\]"
GATHER = r"gather_block must be a power of two in \[16, 1024\]"
LOGPROBS_ERRORS = (
    logits_errors(**VALID)
    + rejected("sampled", TypeError, dtype_message("sampled", "int64"), {
        "int32 sampled": ids([1, 2], torch.int32), "float sampled": floats([1.0, 2.0])}, **VALID)
    + rejected("sampled", ValueError, row_shape("sampled"), {"sampled of wrong length": ids([1, 2, 3])}, **VALID)
    + rejected("sampled", ValueError, r"sampled must hold token ids in \[0, 8\)", {
        "sampled id = V": ids([1, 8]), "sampled id -1": ids([-1, 2])}, **VALID)
    + rejected("num_logprobs", ValueError, N_RANGE, {"num_logprobs -2": -2, "num_logprobs V + 1": 9}, **VALID)
    + rejected("num_logprobs", TypeError, r"num_logprobs must be None or an int in \[-1, vocab\]", {
        "float num_logprobs": 2.0, "bool num_logprobs": True, "tensor num_logprobs": torch.tensor(2)}, **VALID)
    + tuple(ErrorInput(f"gather_block {block}", call(**VALID, gather_block=block), ValueError, GATHER,
                       knob="gather_block", argument="gather_block") for block in (3, 2048))
)

LOGPROBS_REGRESSIONS = (
    # Ties: 4 levels per row, sampled at a tied value, the max's last copy and the min; top-5
    # cuts through the top level's ties (any 5 of them are admissible; a `>` rank counts
    # none of the sampled token's ties).
    RegressionExample("edges: tied values, top-k cutting a tie, ranks with ties",
                      LogprobsCase(LogitsRecipe(batch=4, vocab=1019, family="ties", scale=1.0, seed=21), 5,
                                   ("tie", "max", "min", 0.5)),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    # Whole vocab over three gather steps with half the entries -inf, sampled at a -inf id
    # (logprob -inf, rank V); in every layout, where it also pins finding V1 (the vLLM pack).
    RegressionExample("edges: num_logprobs -1 over 3 gather steps, -inf sampled",
                      LogprobsCase(LogitsRecipe(batch=3, vocab=2053, family="randn", scale=3.0,
                                                neg_inf_fraction=0.5, seed=22), -1, ("neg_inf", "max", 0.25)),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    # One dominant token per row, about 120 above the rest (scale 10), past the first
    # 1024-entry block in every row: a max taken from the first block only leaves exp(l - m)
    # 98 and 107 above it in rows 0 and 1, which overflows fp32 (e^88.7).
    RegressionExample("wide rows: the max outside the first block",
                      LogprobsCase(LogitsRecipe(batch=4, vocab=8193, family="peaked", scale=10.0, seed=27), 3,
                                   ("max", 0.9, "min", "tie")),
                      dtypes=ALL_DTYPES, layouts=("contig", "padded64")),
)


def logprobs_kernel_memory(logits, args) -> int:
    """The family's bound plus our kernels' per-chunk scratch (samplecheck.kernels.logprobs)."""
    scratch = 0 if args["num_logprobs"] is None else scratch_bytes(*logits.shape, args["num_logprobs"])
    return logprobs_memory(logits, args) + scratch


LOGPROBS = register(KernelInfo(
    name="logprobs",
    backends=(Backend("triton", "samplecheck.kernels.logprobs:compute_logprobs", knobs=("gather_block",),
                      capturable=True, guard_flag=True, batch_invariant=True),),
    cases=logprobs_cases, make_args=logprobs_args,
    reference=Oracle(logprobs_reference, tolerance="unit"),
    check=logprobs_check,
    # The unit of samplecheck.oracles.logprobs.error_bound: 2u (u = 2**-24, fp32 unit roundoff,
    # doubled for GPU approximate exp/log); the same for every logits dtype, since values
    # upcast exactly and the computation is fp32.
    tolerance=per_dtype(2**-23),
    semantics={"columns": "sampled token, then top-k ids (k >= 1) or ids 0..V-1 (-1)",
               "tie_policy": "top-k: any ids tied with the k-th value, compared as sets",
               "rank": "count(x >= x_sampled), 1-based, ties against the sampled token",
               "all_neg_inf_row": "NaN logprobs, rank V",
               "precision": "fp32 log_softmax (max, blocked sum of exp, lse), exact ids and ranks"},
    error_inputs=LOGPROBS_ERRORS, examples=LOGPROBS_REGRESSIONS,
    in_place=False, extra_memory=logprobs_kernel_memory,
))
