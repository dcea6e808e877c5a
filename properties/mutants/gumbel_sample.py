"""Mutants of the Gumbel-max sampling kernel."""

from samplecheck.mutants import Mutant
from samplecheck.registry import catalog

_MODULE, _ENTRY = "samplecheck.kernels.gumbel", "gumbel_sample"

MUTANTS = (
    Mutant(
        name="gumbel_empty_batch_planned", kernel="gumbel_sample", module=_MODULE, entry=_ENTRY,
        find="    if batch == 0:\n        return torch.empty(0, dtype=torch.int64, device=logits.device)\n",
        replace="",
        description="no early return for a batch of no rows: the launch plan divides by the batch",
        ref="vllm#20484 (the CUDA repetition-penalty kernel launched a grid of size 0 for 0 sequences)",
        killed_by=catalog.EMPTY_BATCH,
    ),
    Mutant(
        name="gumbel_noise_by_batch_row", kernel="gumbel_sample", module=_MODULE, entry=_ENTRY,
        find="seed = tl.load(seeds_ptr + rows, mask=in_batch, other=0)",
        replace="seed = rows",
        description="noise keyed by the batch row instead of the request's seed: a request's token "
                    "changes with its batch mates and row index",
        ref="FlashInfer's Philox subsequence is the output row (include/flashinfer/sampling.cuh, curand_init): "
            "not batch invariant",
    ),
    Mutant(
        name="gumbel_seed_ignores_position", kernel="gumbel_sample", module=_MODULE, entry=_ENTRY,
        find="position = tl.load(positions_ptr + rows, mask=in_batch, other=0)",
        replace="position = tl.zeros_like(seed)",
        description="noise keyed by the seed alone: every decoding step of a request reuses the same noise",
        ref="MRV2 keys the noise by (seed, position) (vllm/v1/worker/gpu/sample/gumbel.py); cf. vllm#50440 (one "
            "seed broadcast to many prompts gives identical noise)",
    ),
    Mutant(
        name="gumbel_greedy_ties_highest", kernel="gumbel_sample", module=_MODULE, entry=_ENTRY,
        find="better = score > best_score",
        replace="better = score >= best_score",
        then=(("| ids.to(tl.int64)", "| (4294967295 - ids.to(tl.int64))"),
              ("return slots.bitwise_and_(ID_MASK)", "return ID_MASK - slots.bitwise_and_(ID_MASK)")),
        description="tied maxima resolved to the highest id instead of the lowest id",
        ref="tie policy: MRV2 and torch.argmax take the first (lowest) maximum (docs/backends.md, 'gumbel_sample', "
            "mstar#254 greedy tie non-determinism)",
    ),
    Mutant(
        name="gumbel_neg_inf_noised", kernel="gumbel_sample", module=_MODULE, entry=_ENTRY,
        find="        noisy = tl.where(greedy, scaled, scaled + g)",
        replace="        scaled = tl.maximum(scaled, -65504.0)\n        noisy = tl.where(greedy, scaled, scaled + g)",
        description="-inf logits clamped to fp16's lowest finite value before the noise is added: masked "
                    "tokens get finite scores and can be drawn",
        ref="MRV2 scores only finite entries (-inf elsewhere, docs/backends.md, 'gumbel_sample'); finite "
            "'-inf' fills (finfo.min) are a classic masking bug",
    ),
    Mutant(
        name="gumbel_last_block_skipped", kernel="gumbel_sample", module=_MODULE, entry=_ENTRY,
        find="for start in range(lo, hi, BLOCK_V):",
        replace="for start in range(lo, hi - BLOCK_V + 1, BLOCK_V):",
        description="the loop over the vocab stops before the last partial block: its tokens are never drawn",
        ref="fault class: wrong last partial block (issue's mutant list)",
    ),
)
