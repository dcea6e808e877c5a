"""How FlashInfer's `top_p_renorm_probs` compares with the nucleus (finding F6 in
docs/findings.md), on randn fp32 rows of standard deviation 1 and 0.1, p up to 1 (off):

    python -m samplecheck.probes.flashinfer_top_p      (GPU with flashinfer installed)

Per (V, scale, p, seed), one row: the nucleus of the fp64 oracle (`samplecheck.oracles.top_k_top_p`:
keep x iff the mass strictly above it is < p) and the ids FlashInfer keeps (renormalised
probability > 0) with `is_deterministic=True` (as our adapter calls it) and False, with the
fp64 mass of each set and the nucleus ids each drops. Prints a markdown table.
"""

import itertools

import torch

from samplecheck.oracles.top_k_top_p import top_k_top_p_reference

VOCABS = (4096, 32000, 151936)
TOP_PS = (0.5, 0.9, 0.95, 0.99, 1.0)
SEEDS = (0, 1, 2)
SCALES = (1.0, 0.1)  # randn standard deviations: ordinary rows and nearly flat ones


def main() -> None:
    from flashinfer.sampling import top_p_renorm_probs

    print("| V | scale | p | seed | nucleus: ids, mass | deterministic: ids, mass, nucleus ids dropped "
          "| non-deterministic: ids, mass, nucleus ids dropped |")
    print("|---|---|---|---|---|---|---|")
    for vocab, scale, p, seed in itertools.product(VOCABS, SCALES, TOP_PS, SEEDS):
        gen = torch.Generator(device="cuda").manual_seed(seed)
        logits = scale * torch.randn(1, vocab, generator=gen, device="cuda")
        p_row = torch.full((1,), p, device="cuda")
        exact = torch.softmax(logits.double(), dim=-1)
        nucleus = top_k_top_p_reference(logits, None, p_row).kept
        cells = [f"{int(nucleus.sum())}, {float(exact[nucleus].sum()):.6f}"]
        for deterministic in (True, False):
            kept = top_p_renorm_probs(torch.softmax(logits, dim=-1), p_row, is_deterministic=deterministic) > 0
            cells.append(f"{int(kept.sum())}, {float(exact[kept].sum()):.6f}, {int((nucleus & ~kept).sum())}")
        print(f"| {vocab} | {scale} | {p} | {seed} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
