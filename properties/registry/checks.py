"""Assertions shared by the generic properties. Each failure message says what differs and where."""

import re
from typing import Callable

import torch

from samplecheck.registry.layouts import as_bits


FP32_TINY = torch.finfo(torch.float32).tiny
KEPT_DROPPED = "dropped only entries the oracle keeps"
UNDERFLOWED_DROPPED = "dropped only entries of probability below fp32's normal range"


def _first_positions(mask: torch.Tensor, limit: int = 5) -> list[tuple[int, ...]]:
    return [tuple(int(i) for i in idx) for idx in mask.nonzero()[:limit].cpu()]


def assert_bitwise_equal(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    """Equal bytes (compared as integers), same shape and dtype."""
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    differ = as_bits(actual) != as_bits(expected)
    if bool(differ.any()):
        where = _first_positions(differ)
        values = [(float(actual[w]), float(expected[w])) for w in where]
        raise AssertionError(
            f"{what}: {int(differ.sum())} of {differ.numel()} elements differ bitwise; "
            f"first at {where} (actual, expected) = {values}"
        )


def assert_masked_like(original: torch.Tensor, actual: torch.Tensor, kept: torch.Tensor,
                       ambiguous: torch.Tensor, what: str) -> None:
    """Every entry is either unchanged (bitwise) or -inf; it is unchanged exactly where
    `kept`, except at `ambiguous` entries, where both are admissible. A kept-set difference
    says in how many of its rows the output left the whole row unchanged (unmasked), in how
    many it only dropped entries the oracle keeps (kept none the oracle masks), and in how many
    of those every dropped entry's probability (softmax of the row) lies below fp32's normal
    range: the signature of a filter that reads an fp32 probability of 0 as a reason to mask."""
    unchanged = as_bits(actual) == as_bits(original)
    masked = actual == float("-inf")
    stray = ~unchanged & ~masked
    if bool(stray.any()):
        where = _first_positions(stray)
        raise AssertionError(f"{what}: entries neither kept bitwise nor set to -inf at {where}")
    # An entry that was -inf already is both kept and masked.
    wrong = (kept != unchanged) & ~ambiguous & ~(original == float("-inf"))
    if bool(wrong.any()):
        where = _first_positions(wrong)
        detail = [f"{w}: value={float(original[w])}, oracle {'keeps' if kept[w] else 'masks'}" for w in where]
        rows = wrong.any(dim=-1)
        unmasked = rows & unchanged.all(dim=-1)
        underflowed = torch.softmax(original.double(), dim=-1) < FP32_TINY
        only_dropped = rows & ~(wrong & ~(kept & masked)).any(dim=-1)
        only_underflowed = only_dropped & ~(wrong & ~underflowed).any(dim=-1)
        counts = [f"{int(count.sum())} of {int(rows.sum())} differing rows {shape}" for count, shape in
                  ((unmasked, "left unmasked"), (only_dropped, KEPT_DROPPED), (only_underflowed, UNDERFLOWED_DROPPED))]
        raise AssertionError(
            f"{what}: kept set differs from the oracle at {int(wrong.sum())} entries "
            f"(rows {sorted({w[0] for w in _first_positions(wrong, 50)})}); " + "; ".join(counts + detail)
        )


def output_tensors(output) -> list[torch.Tensor]:
    """The tensors of a backend's output, in order: a tensor, or a (named) tuple of
    tensors, Nones and nested tuples."""
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, tuple):
        return [t for item in output for t in output_tensors(item)]
    if output is None:
        return []
    raise TypeError(f"a backend output must be a tensor or a tuple of tensors, got {type(output).__name__}")


def output_rows(output, rows: list[int]):
    """`output` with every tensor restricted to `rows` (its first dimension is the batch)."""
    if isinstance(output, torch.Tensor):
        return output[rows]
    if isinstance(output, tuple):
        items = [output_rows(item, rows) for item in output]
        return type(output)(*items) if hasattr(output, "_fields") else tuple(items)
    return output


def assert_outputs_bitwise(actual, expected, what: str) -> None:
    """`assert_bitwise_equal` on every tensor of two outputs of the same structure."""
    got, want = output_tensors(actual), output_tensors(expected)
    assert len(got) == len(want), f"{what}: {len(got)} output tensors != {len(want)}"
    for i, (a, e) in enumerate(zip(got, want)):
        assert_bitwise_equal(a, e, what if len(got) == 1 else f"{what} (output tensor {i})")


def assert_same_output(info, actual, expected, what: str, vocab: int) -> None:
    """Two outputs of `info`'s kernel for inputs that differ only in layout or batch mates:
    the record's `same_output` comparison, bitwise by default."""
    if info.same_output is None:
        assert_outputs_bitwise(actual, expected, what)
    else:
        info.same_output(actual, expected, what, vocab)


def assert_same_masks(actual: torch.Tensor, expected: torch.Tensor, what: str, vocab: int) -> None:
    """Two masked outputs, bitwise (a masking record's `same_output`). A difference is reported
    row by row: the rows that differ, each output's count of entries above -inf in them, and
    how many of them one output leaves unmasked (no -inf entry there, where the other has
    some), the signature of a kernel that skips a row's masking."""
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return assert_bitwise_equal(actual, expected, what)  # says which differs
    differ = as_bits(actual) != as_bits(expected)
    if not bool(differ.any()):
        return
    rows = differ.any(dim=-1).nonzero().flatten().tolist()
    kept_a, kept_e = (t[rows] != float("-inf") for t in (actual, expected))
    unmasked = kept_a.all(dim=-1) != kept_e.all(dim=-1)
    counts = [f"{r}: {int(a)} vs {int(e)}" for r, a, e in zip(rows[:8], kept_a.sum(-1), kept_e.sum(-1))]
    where = _first_positions(differ)
    values = [(float(actual[w]), float(expected[w])) for w in where]
    raise AssertionError(
        f"{what}: {int(differ.sum())} of {differ.numel()} elements differ bitwise, in {len(rows)} rows; entries "
        f"above -inf (actual vs expected) in rows {'; '.join(counts)}; {int(unmasked.sum())} of {len(rows)} "
        f"differing rows left unmasked by one output; first at {where} (actual, expected) = {values}")


def every_differing_row(phrase: str) -> Callable[[str], bool]:
    """A `Mark.witness` for a check whose failure counts its differing rows that show a finding
    ("k of n differing rows <phrase>"): the failure is that check's, and k == n."""
    pattern = re.compile(rf"(\d+) of (\d+) differing rows {re.escape(phrase)}")

    def witness(failure: str) -> bool:
        found = pattern.search(failure)
        return found is not None and found.group(1) == found.group(2)
    return witness


# `assert_same_masks`'s or `assert_masked_like`'s difference, every differing row left unmasked
# (by one of the two outputs; by the output, against the oracle).
rows_left_unmasked_only = every_differing_row("left unmasked")
# `assert_masked_like`'s difference, every differing row only missing entries the oracle keeps
# (a filter that drops tokens of the nucleus and adds none).
rows_dropping_kept_only = every_differing_row(KEPT_DROPPED)
# `assert_masked_like`'s difference, every differing row only missing entries whose probability
# underflows fp32 (a filter that masks where an fp32 softmax reads 0).
rows_dropping_underflowed_only = every_differing_row(UNDERFLOWED_DROPPED)


def assert_group_counts(original: torch.Tensor, actual: torch.Tensor, group: torch.Tensor,
                        count: torch.Tensor, what: str) -> None:
    """In each row with count >= 0, exactly `count` entries of `group` are kept (not -inf
    where the input was finite): an exactly-k tie policy keeps k entries, whichever ties."""
    kept = group & (actual != float("-inf")) & torch.isfinite(original)
    got = kept.sum(dim=-1)
    wrong = (count >= 0) & (got != count)
    if bool(wrong.any()):
        rows = wrong.nonzero().flatten()[:5].tolist()
        raise AssertionError(f"{what}: rows {rows} keep {[int(got[r]) for r in rows]} of the values tied at the "
                             f"k-th, the declared tie policy keeps exactly {[int(count[r]) for r in rows]}")


def assert_within_bound(actual: torch.Tensor, expected: torch.Tensor, bound: torch.Tensor, what: str) -> None:
    """|actual - expected| <= bound elementwise (fp64; equal infinities and NaNs match; a zero
    bound means bitwise)."""
    a, e = actual.to(torch.float64), expected.to(torch.float64)
    same = (as_bits(actual) == as_bits(expected)) | (a.isnan() & e.isnan())
    wrong = ~same & ~((a - e).abs() <= bound)
    if bool(wrong.any()):
        where = _first_positions(wrong)
        detail = [f"{w}: got {float(a[w])!r}, expected {float(e[w])!r} within {float(bound[w])!r}" for w in where]
        raise AssertionError(f"{what}: {int(wrong.sum())} entries outside the declared bound; " + "; ".join(detail))
