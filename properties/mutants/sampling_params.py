"""Mutants of the apply_sampling_params pipeline."""

from samplecheck.mutants import Mutant

MUTANTS = (
    Mutant(
        name="pipeline_raw_logprobs_after_processing", kernel="sampling_params",
        module="samplecheck.kernels.sampling_params", entry="apply_sampling_params",
        find="_logprobs(raw if raw is not None else logits, sampled, p, flag)",
        replace="_logprobs(logits, sampled, p, flag)",
        description="raw logprobs computed from the logits after the in-place processing (the raw clone unused)",
        ref="seed: in-place mutation of logits that raw logprobs still need (vllm#48641's dtype-preserving sampler)",
    ),
    Mutant(
        name="pipeline_temperature_before_penalties", kernel="sampling_params",
        module="samplecheck.kernels.sampling_params", entry="apply_sampling_params",
        find="    if p.repetition_penalty is not None:\n        launch_penalties(",
        replace="    launch_temperature(logits, p.temperature, flag, False)\n    if p.repetition_penalty is not None:\n"
                "        launch_penalties(",
        description="temperature applied before the penalties as well (the order of the engine's ops changed)",
        ref="vLLM V1 vs MRV2 op order (vllm/v1/sample/sampler.py against vllm/v1/worker/gpu/sample/sampler.py; "
            "docs/backends.md, 'sampling_params'): penalties precede temperature",
    ),
    Mutant(
        name="pipeline_greedy_rows_sampled", kernel="sampling_params",
        module="samplecheck.kernels.sampling_params", entry="apply_sampling_params",
        find="launch_gumbel(logits, p.seeds, p.positions, p.temperature, flag, False, divide=False)",
        replace="launch_gumbel(logits, p.seeds, p.positions, None, flag, False, divide=False)",
        description="greedy rows (T = 0) sampled with noise instead of taking the argmax",
        ref="vllm#5404, #41598 (greedy not greedy); MRV2 gumbel_sample skips noise for T = 0",
    ),
)
