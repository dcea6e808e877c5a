"""Hypothesis strategies for sampling-kernel inputs.

Shapes come from a device `Budget` (the CPU interpreter gets small rows; a GPU gets real
vocab sizes and batches up to 1024). Strategies draw recipes, never tensors: see
`samplecheck.inputs.recipes`. Per-row parameters are drawn as a small pool that rows cycle
through, so a 1024-row batch still costs a handful of draws and mixes enabled and
disabled rows.
"""

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from samplecheck.inputs.recipes import FAMILIES, LogitsRecipe

REAL_VOCABS = (32000, 50257, 50272, 128256, 151936, 152064, 202048, 256000, 262144)
ADVERSARIAL_VOCABS = (1, 2, 17, 1019, 8191, 8192, 8193, 65535, 65536, 65537)
EDGE_BATCHES = (1, 7, 8, 9, 1024)


@dataclass(frozen=True)
class Budget:
    """Caps per drawn example: batch * vocab <= max_elements, batch <= max_batch, and
    drawn vocab sizes (not the fixed real/adversarial ones) <= max_random_vocab; with
    `random_vocabs` False only the fixed sizes are drawn (a backend that compiles per size):
    `vocabs` when given, else the real and adversarial ones."""

    max_elements: int
    max_batch: int
    max_random_vocab: int
    random_vocabs: bool = True
    vocabs: tuple[int, ...] | None = None


BUDGETS = {
    "cpu": Budget(max_elements=2**14, max_batch=9, max_random_vocab=2048),
    "cuda": Budget(max_elements=2**25, max_batch=1024, max_random_vocab=2**17),
}


def within_vocab(budget: Budget, vocab: int) -> Budget:
    """`budget` drawing vocabularies of at most `vocab` ids: random ones below it, and the
    fixed real and adversarial sizes that fit (`vocab` itself when none does)."""
    vocab = max(1, min(vocab, budget.max_random_vocab))
    fixed = tuple(v for v in (budget.vocabs or REAL_VOCABS + ADVERSARIAL_VOCABS) if v <= vocab) or (vocab,)
    return replace(budget, max_random_vocab=vocab, vocabs=fixed)


def vocab_sizes(budget: Budget) -> st.SearchStrategy[int]:
    sizes = REAL_VOCABS + ADVERSARIAL_VOCABS if budget.vocabs is None else budget.vocabs
    fixed = st.sampled_from([v for v in sizes if v <= budget.max_elements])
    return st.one_of(fixed, st.integers(1, budget.max_random_vocab)) if budget.random_vocabs else fixed


def logits_recipes(budget: Budget, max_vocab: int | None = None) -> st.SearchStrategy[LogitsRecipe]:
    """Logits recipes within the budget, shared within one example: every strategy of one
    drawn case that asks for a recipe (with the same budget and cap) gets the same one, so
    a pipeline case can compose the ops' own case strategies on one set of logits."""
    return st.shared(_fresh_logits_recipes(budget, max_vocab), key=f"logits/{budget}/{max_vocab}")


@st.composite
def _fresh_logits_recipes(draw, budget: Budget, max_vocab: int | None = None) -> LogitsRecipe:
    vocab = draw(vocab_sizes(budget).filter(lambda v: max_vocab is None or v <= max_vocab))
    max_batch = max(1, min(budget.max_batch, budget.max_elements // vocab))
    batch = draw(st.one_of(st.sampled_from([b for b in EDGE_BATCHES if b <= max_batch]),
                           st.integers(1, max_batch)))
    family = draw(st.sampled_from(FAMILIES))
    scale = draw(st.sampled_from([0.1, 1.0, 3.0, 10.0]))
    neg_inf = draw(st.sampled_from([0.0, 0.0, 0.5, 0.9, 0.999, 1.0]))
    seed = draw(st.integers(0, 2**63 - 1))
    return LogitsRecipe(batch, vocab, family, scale, neg_inf, seed)


def top_k_values(vocab: int) -> st.SearchStrategy[int]:
    """k per row, edges first: off (-1, 0), 1, V-1, V, V+1, and anything in 1..V."""
    return st.one_of(st.sampled_from([-1, 0, 1, max(vocab - 1, 1), vocab, vocab + 1]),
                     st.integers(1, max(vocab, 1)))


def top_p_values() -> st.SearchStrategy[float]:
    """p per row, edges first: tiny, 0.5, 0.9, 0.99, 1.0 (off), and anything in (0, 1]."""
    return st.one_of(st.sampled_from([1e-6, 0.5, 0.9, 0.99, 1.0]),
                     st.floats(1e-6, 1.0, allow_nan=False))
