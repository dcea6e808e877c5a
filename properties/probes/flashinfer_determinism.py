"""Whether FlashInfer's seeded samplers repeat themselves (finding F8 in docs/findings.md):

    python -m samplecheck.probes.flashinfer_determinism      (GPU with flashinfer installed)

(tests/cover/test_repeatability.py asserts the same on every backend.) The input is the case
on which `test_deterministic[top_k_top_p_sample-flashinfer_probs_top_k_first-fp16-contig]`
failed once in run 6: B = 49, V = 202048, randn logits of standard deviation 0.1
(recipe seed 49), k and p off, seed 49. Each top_k_top_p_sample backend of the FlashInfer pack
(adapters with deterministic=True; each accepts k and p off) is called REPEATS times on
it in each dtype, with the same seed; the table counts the calls whose ids differ from the
first call's, and the row and ids of the first difference.
"""

from samplecheck.backends.flashinfer_pack import pack
from samplecheck.families.masking import TopKTopPCase
from samplecheck.infos.top_k_top_p_sample import TOP_K_TOP_P_SAMPLE
from samplecheck.inputs.recipes import LogitsRecipe, materialize
from samplecheck.registry.records import DTYPE_NAMES

CASE = TopKTopPCase(LogitsRecipe(batch=49, vocab=202048, family="randn", scale=0.1, seed=49), None, None)
REPEATS = 200


def main() -> None:
    print(f"| backend | dtype | calls differing from the first (of {REPEATS}) | first difference: row, ids |")
    print("|---|---|---|---|")
    for kernel, backend in pack():
        if kernel != TOP_K_TOP_P_SAMPLE.name:
            continue
        for dtype in TOP_K_TOP_P_SAMPLE.dtypes:
            logits = materialize(CASE.logits, dtype, "cuda")
            args = TOP_K_TOP_P_SAMPLE.make_args(CASE, logits)
            sampler = backend.resolve()
            first = sampler(logits, **args)
            differing, example = 0, "-"
            for _ in range(REPEATS - 1):
                ids = sampler(logits, **args)
                rows = (ids != first).nonzero().flatten().tolist()
                if rows:
                    differing += 1
                    if example == "-":
                        example = f"{rows[0]}: {int(first[rows[0]])} then {int(ids[rows[0]])}"
            print(f"| {backend.name} | {DTYPE_NAMES[dtype]} | {differing} | {example} |", flush=True)


if __name__ == "__main__":
    main()
