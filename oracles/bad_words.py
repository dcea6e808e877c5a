"""Reference for multi-token bad words (vLLM's rule; docs/backends.md, "bad_words").

Semantics (what every bad_words backend is checked against):
- Input: logits [B, V] (any float dtype), bad_words [B, W, T] and output_token_ids [B, O]
  (integer tensors right-padded with -1).
- Word w of row r is bad_words[r, w] up to its first -1; an all -1 word is absent. The
  past of row r is output_token_ids[r] up to its first -1 (the whole row when it holds no
  -1); whatever follows the first -1 is unknown and ignored.
- Rule: a word [t0 .. tn] bans tn iff the last n tokens of the past equal [t0 .. tn-1].
  A single-token word (n = 0) is always banned; a word with n > len(past) is skipped.
  Matching is exact on ids; words may overlap and several may ban the same id.
- Output: the banned entries become -inf, every other entry is bitwise the input
  (-inf stays -inf, NaN and +inf are kept unless banned). Nothing is computed, so the
  result is exact: there is no tolerance and no ambiguous entry.
- Ids: defined for ids in [0, V) only; a banned id outside it raises ValueError (backends
  must reject it: an unchecked store would write outside the row, vLLM #48824).
"""

from dataclasses import dataclass

import torch

PAD_ID = -1


@dataclass(frozen=True)
class BadWordsReference:
    """banned: bool [B, V], the entries the rule sets to -inf."""

    banned: torch.Tensor


def _until_pad(ids: list[int]) -> list[int]:
    """The entries before the first -1."""
    return ids[:ids.index(PAD_ID)] if PAD_ID in ids else ids


def banned_ids(words: list[list[int]], past: list[int]) -> set[int]:
    """The ids one row's words ban after `past` (both already cut at their first -1)."""
    banned = set()
    for word in words:
        if not word:
            continue
        *prefix, last = word
        if len(prefix) > len(past):
            continue
        if past[len(past) - len(prefix):] == prefix:
            banned.add(last)
    return banned


def bad_words_reference(logits: torch.Tensor, bad_words: torch.Tensor,
                        output_token_ids: torch.Tensor) -> BadWordsReference:
    """The banned mask for `logits` under the rule above."""
    batch, vocab = logits.shape
    banned = torch.zeros((batch, vocab), dtype=torch.bool)
    for r, (row_words, row_past) in enumerate(zip(bad_words.tolist(), output_token_ids.tolist())):
        for t in banned_ids([_until_pad(w) for w in row_words], _until_pad(row_past)):
            if not 0 <= t < vocab:
                raise ValueError(f"bad_words: banned id {t} in row {r} is outside [0, {vocab})")
            banned[r, t] = True
    return BadWordsReference(banned=banned.to(logits.device))


def bad_words_expected(logits: torch.Tensor, reference: BadWordsReference) -> torch.Tensor:
    """The oracle's output: `logits` with every banned entry set to -inf."""
    return logits.masked_fill(reference.banned, float("-inf"))
