"""Fake plug-ins for the tests of what the suite's properties catch and what they ask of a
backend (tests/cover/test_partial_backends.py, tests/cover/test_edge_values_power.py). Each
computes its record's contract (the oracle, or our PyTorch path) but for the one behaviour it
stands for."""

import torch

from samplecheck.kernels.penalties import check_penalties
from samplecheck.kernels.top_k_top_p_torch import apply_top_k_top_p_torch
from samplecheck.oracles.bad_words import bad_words_reference
from samplecheck.oracles.penalties import penalties_reference


class OutsideAccepts(Exception):
    """A backend was called with a case its declared `accepts` rejects."""


def repetition_cases(case) -> bool:
    """the repetition penalty only (frequency and presence 0)"""
    return not any(case.frequency) and not any(case.presence)


def repetition_only(logits: torch.Tensor, *, prompt_token_ids, output_token_ids, repetition_penalty,
                    frequency_penalty, presence_penalty) -> torch.Tensor:
    """A penalties plug-in that implements the repetition penalty alone (it declares
    `accepts=repetition_cases`): the contract (its oracle) where the frequency and presence
    penalties are 0, bad input raising as our kernel's checks say, and OutsideAccepts for any
    other call."""
    args = {"prompt_token_ids": prompt_token_ids, "output_token_ids": output_token_ids,
            "repetition_penalty": repetition_penalty, "frequency_penalty": frequency_penalty,
            "presence_penalty": presence_penalty}
    check_penalties(logits, **args).check_now()
    if bool(frequency_penalty.any()) or bool(presence_penalty.any()):
        raise OutsideAccepts("repetition_only was called with a frequency or presence penalty, which its accepts "
                             "rejects")
    logits.copy_(penalties_reference(logits, **args).expected)
    return logits


repetition_only.samplecheck = {"accepts": repetition_cases}


def bans_by_adding_negative_infinity(logits: torch.Tensor, *, bad_words, output_token_ids) -> torch.Tensor:
    """Bad words as Hugging Face transformers' NoBadWordsLogitsProcessor bans them (a sequence
    bias of -inf added to the banned ids): a banned +inf or NaN logit becomes NaN, where the
    contract sets every banned id to -inf whatever its value."""
    banned = bad_words_reference(logits, bad_words, output_token_ids).banned
    logits[banned] += float("-inf")
    return logits


def top_k_top_p_nan_largest(logits: torch.Tensor, k=None, p=None) -> torch.Tensor:
    """Top-k / top-p that ranks NaN above every other value (as torch.topk and a descending
    sort do) and keeps the NaN it ranks in: our PyTorch path on the row with NaN read as +inf."""
    ranked = torch.nan_to_num(logits, nan=float("inf"), posinf=float("inf"), neginf=float("-inf"))
    dropped = apply_top_k_top_p_torch(ranked, k, p) == float("-inf")
    return logits.masked_fill_(dropped, float("-inf"))
