"""Whether vLLM's Triton top-k/top-p (`apply_top_k_top_p_triton`) depends on the row layout or
on the calls before it (the pack's layout lead in docs/findings-vllm.md, classified there from
this probe's output: a row whose padded and contiguous kept sets differ):

    SAMPLECHECK_VLLM_KERNELS=../shared/external/vllm_kernels python -m samplecheck.probes.vllm_triton_layouts

On a GPU. Per case (peaked or randn fp32 rows, per-row k and p drawn from a seeded
generator), the same values are masked five times: contiguous after `reset_buffer_cache()`
(the reference), padded to a multiple of 64 after a reset, contiguous and padded again with
the per-vocabulary scratch buffer left from the calls before, and contiguous after a call on
other rows of the same vocabulary size (a stale buffer). Prints a markdown table: the rows whose
kept set differs from the reference in each call. Differences only after a reset-free call
point at the cached buffer; differences right after a reset point at the layout. For each row
that differs after a reset, a second table gives each layout's kept count and its entries
outside the declared oracle (`top_p_boundary=pivot_search`, the record's fp32 band): zero in
both layouts means a convention (the reduction order), more means a defect.

Then top-p alone (p = 0.5) on rows with one dominant token whose other probabilities underflow
in fp32 (peaked rows of scale 10, V = 17 and 65537): the ids kept per row, against the one
the nucleus holds (finding V7: vLLM keeps every id of the V = 17 rows).
"""

import itertools

import torch

from samplecheck.backends import vllm_source as src
from samplecheck.infos.top_k_top_p import TOP_K_TOP_P
from samplecheck.inputs.recipes import LogitsRecipe, materialize
from samplecheck.oracles.top_k_top_p import top_k_top_p_declared_reference
from samplecheck.registry.layouts import place

VOCABS = (65537, 32000, 8193)
BATCHES = (91, 200)
FAMILIES = ("peaked", "randn")
SEEDS = (0, 1, 2)
BAND = TOP_K_TOP_P.tolerance[torch.float32]  # the record's fp32 band, the declared oracle's


def _params(batch: int, vocab: int, seed: int, device):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    k = torch.randint(1, 64, (batch,), generator=gen)
    k = torch.where(torch.rand(batch, generator=gen) < 0.2, vocab, k).to(torch.int32)
    p = torch.where(torch.rand(batch, generator=gen) < 0.3, 1.0, torch.rand(batch, generator=gen) * 0.98 + 0.01)
    return k.to(device), p.to(device)


def _kept(module, values, layout, k, p, reset):
    if reset:
        module.reset_buffer_cache()
    placed = place(values, layout, float("nan"))
    out = module.apply_top_k_top_p_triton(placed.view, k, p)
    return torch.isfinite(out)



def _outside_oracle(case, rows, contiguous, padded, oracle) -> list[str]:
    """Per row: each layout's kept count and its entries outside the oracle (kept where the
    oracle masks or masked where it keeps, ambiguous entries aside)."""
    lines = []
    for row in rows:
        sure = ~oracle.ambiguous[row]
        cells = [f"{int(kept[row].sum())}, {int(((kept[row] != oracle.kept[row]) & sure).sum())}"
                 for kept in (contiguous, padded)]
        lines.append(f"| {case} | {row} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    module = src.module("v1_topk_topp_triton")
    device = torch.device("cuda")
    outside = []
    print("| V | B | family | seed | rows differing: padded after reset | contig again | padded again "
          "| contig after other rows |")
    print("|---|---|---|---|---|---|---|---|")
    for vocab, batch, family, seed in itertools.product(VOCABS, BATCHES, FAMILIES, SEEDS):
        values = materialize(LogitsRecipe(batch, vocab, family, seed=seed), torch.float32, device)
        other = materialize(LogitsRecipe(batch, vocab, "randn", seed=seed + 100), torch.float32, device)
        k, p = _params(batch, vocab, seed, device)
        reference = _kept(module, values, "contig", k, p, reset=True)
        cells = [_kept(module, values, "padded64", k, p, reset=True),
                 _kept(module, values, "contig", k, p, reset=False),
                 _kept(module, values, "padded64", k, p, reset=False)]
        _kept(module, other, "contig", k, p, reset=False)
        cells.append(_kept(module, values, "contig", k, p, reset=False))
        diffs = [(kept != reference).any(dim=-1).nonzero().flatten().tolist() for kept in cells]
        print(f"| {vocab} | {batch} | {family} | {seed} | " + " | ".join(
            f"{len(d)} {d[:4]}" if d else "0" for d in diffs) + " |")
        if diffs[0]:
            oracle = top_k_top_p_declared_reference(values, k, p, top_p_boundary="pivot_search", band=BAND)
            outside.extend(_outside_oracle((vocab, batch, family, seed), diffs[0], reference, cells[0], oracle))
    print()
    print("| case (V, B, family, seed) | row | contiguous: kept, outside the oracle | padded: kept, outside the oracle |")
    print("|---|---|---|---|")
    for line in outside:
        print(line)

    print()
    print("| V | top-p alone, p = 0.5, peaked rows of scale 10: ids kept per row (nucleus: 1) |")
    print("|---|---|")
    for vocab in (17, 65537):
        values = materialize(LogitsRecipe(7, vocab, "peaked", scale=10.0, seed=0), torch.float32, device)
        module.reset_buffer_cache()
        out = module.apply_top_k_top_p_triton(values.clone(), None, torch.full((7,), 0.5, device=device))
        print(f"| {vocab} | {torch.isfinite(out).sum(dim=-1).tolist()} |")


if __name__ == "__main__":
    main()
