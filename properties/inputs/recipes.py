"""Logits recipes: small drawable descriptions that materialise into big tensors.

Hypothesis draws a `LogitsRecipe` (shape, family, scale, -inf fraction, torch seed), never
the tensor itself; `materialize` builds the tensor from an explicit torch.Generator on the
target device, so the same recipe gives the same logits on every run on that device.
"""

from dataclasses import dataclass

import torch

FAMILIES = ("randn", "peaked", "ties", "flat")  # the families the strategies draw
# Families only fixed cases (regression examples) name: rows of a structure a drawn family
# cannot give at every vocab size.
EXAMPLE_FAMILIES = ("levels", "runs")
RUNS, RUN_LENGTH = 4, 16  # the "runs" family's runs of entries above -inf a row, and their length


@dataclass(frozen=True)
class LogitsRecipe:
    """batch x vocab logits.

    family: randn (Gaussian of std `scale`); peaked (randn plus one dominant token per row,
    holding about 40-99% of the mass); ties (values on 4 levels, so most entries tie);
    flat (every entry equal); levels (regression examples only: integer levels 0, 1, 2, ...,
    level j holding about 86% * e**(-2j) of the entries, so the top levels are sparse and
    each level below ties about 7 times as many entries); runs (regression examples only: -inf
    but for RUNS runs of RUN_LENGTH adjacent columns of randn entries, at random starts, as an
    allowed-token list of id ranges leaves a row: the entries above -inf outnumber the lanes of
    adjacent columns that hold them). neg_inf_fraction: share of entries set to -inf, capped so
    that each row keeps at least one finite entry.
    """

    batch: int
    vocab: int
    family: str = "randn"
    scale: float = 1.0
    neg_inf_fraction: float = 0.0
    seed: int = 0


def materialize(recipe: LogitsRecipe, dtype: torch.dtype, device) -> torch.Tensor:
    """The contiguous [batch, vocab] logits of `recipe`, generated in fp32 then cast to `dtype`."""
    if recipe.family not in FAMILIES + EXAMPLE_FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES + EXAMPLE_FAMILIES}, got {recipe.family!r}")
    gen = torch.Generator(device=device).manual_seed(recipe.seed)
    shape = (recipe.batch, recipe.vocab)
    x = torch.randn(shape, generator=gen, device=device)
    if recipe.family == "peaked":
        top = torch.randint(0, recipe.vocab, (recipe.batch, 1), generator=gen, device=device)
        x.scatter_add_(1, top, torch.full((recipe.batch, 1), 12.0, device=device))
    elif recipe.family == "ties":
        x = torch.randint(0, 4, shape, generator=gen, device=device).float()
    elif recipe.family == "flat":
        x = torch.zeros(shape, device=device)
    elif recipe.family == "levels":
        x = torch.floor(torch.empty(shape, device=device).exponential_(generator=gen) / 2)
    elif recipe.family == "runs":
        starts = torch.randint(0, max(1, recipe.vocab - RUN_LENGTH + 1), (recipe.batch, RUNS), generator=gen,
                               device=device)
        columns = (starts[:, :, None] + torch.arange(RUN_LENGTH, device=device)).flatten(1).clamp(max=recipe.vocab - 1)
        in_run = torch.zeros(shape, dtype=torch.bool, device=device).scatter_(1, columns, True)
        x = x.masked_fill(~in_run, float("-inf"))
    x = x * recipe.scale
    if recipe.neg_inf_fraction > 0 and recipe.vocab > 1:
        u = torch.rand(shape, generator=gen, device=device)
        keep = torch.randint(0, recipe.vocab, (recipe.batch, 1), generator=gen, device=device)
        u.scatter_(1, keep, 2.0)
        x = x.masked_fill(u < recipe.neg_inf_fraction, float("-inf"))
    return x.to(dtype)
