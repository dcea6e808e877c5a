"""The bad-words oracle against hand-worked cases of the rule (docs/backends.md, "bad_words"),
so that a kernel and an oracle sharing a misreading of the rule cannot agree unnoticed."""

import pytest

from samplecheck.oracles.bad_words import banned_ids


@pytest.mark.parametrize("words, past, banned", [
    ([[7]], [], {7}),                        # a single-token word is always banned
    ([[3, 7]], [], set()),                   # prefix longer than the (empty) past: skipped
    ([[1, 2, 7]], [1, 2], {7}),              # the whole past as the prefix
    ([[9, 1, 2, 7]], [1, 2], set()),         # prefix one token longer than the past
    ([[2, 7]], [1, 2], {7}),                 # the last token of the past
    ([[1, 7]], [1, 2], set()),               # matches the start of the past, not its end
    ([[5, 3, 7]], [5, 3, 6, 4], set()),      # start only
    ([[6, 5, 7]], [5, 3, 6, 4], set()),      # near miss in the last prefix token
    ([[2, 7], [1, 2, 7], [8]], [1, 2], {7, 8}),  # overlapping words, one id banned twice
    ([[], [4]], [0], {4}),                   # an absent word
])
def test_bad_words_oracle_rule(words, past, banned):
    assert banned_ids(words, past) == banned
