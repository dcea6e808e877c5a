"""Registry record for sampling one token per row under min-p (not in place).

Contract: `fn(logits, *, min_p=None, seed: int) -> int64 ids [B]`; logits and min_p as in
the `min_p` record (same validation and error inputs); the input is left bitwise
unchanged; the same seed gives the same ids. Every id must lie in the `min_p` oracle's
kept set (ambiguous entries admitted); the ids' law is that oracle's law. Cases, oracle,
law and error inputs are the `min_p` record's.

Band: a probability-space backend (the FlashInfer pack's min_p_sampling_from_probs) decides
p_i >= min_p * p_max on an fp32 softmax, ours in log space, l_i >= max + log(min_p): the
same rule in exact arithmetic (p_i / p_max = exp(l_i - max)), different roundings. The fp32
log-ratio log(p_i / p_max) is off by at most u (|l_i - max| + 10) (u = 2**-24: the
subtraction of the max, two exps of a few ulp, the divisions by the row sum, the product
min_p * p_max). Near the threshold |l_i - max| ~ |log(min_p)| <= scale = |log(min_p)| +
|threshold|, so a relative band of 2**-16 of `scale` covers it whenever scale >= 0.04
(min_p < 0.96, or a row max away from 0); the masking record's 2**-20 covers a log-space
fp32 threshold only.
"""

from samplecheck.families.masking import min_p_distribution_cases
from samplecheck.families.samplers import TORCH_CPU_DISTRIBUTION, sampler_of
from samplecheck.infos.min_p import MIN_P
from samplecheck.registry.matrix import register
from samplecheck.registry.records import Backend, beyond_memory_bound, per_dtype

TORCH_COPIES = beyond_memory_bound(
    "the PyTorch path masks an fp32 clone and makes an fp32 softmax of [B, V] (by design)")

MIN_P_SAMPLE = register(sampler_of(
    MIN_P, name="min_p_sample",
    backends=(
        Backend("torch", "samplecheck.kernels.sampling_torch:min_p_sample_torch",
                marks=(TORCH_COPIES, TORCH_CPU_DISTRIBUTION), batch_invariant=False),  # one generator per call
    ),
    tolerance=per_dtype(2**-16, MIN_P.dtypes),
    semantics={"space": "log (probability-space backends: equal up to rounding, see band)"},
    distribution_cases=min_p_distribution_cases,
    examples=MIN_P.examples,
))
