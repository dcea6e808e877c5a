"""A plug-in that implements part of a record (its `accepts`, docs/backends.md) is called
with no case it rejects: every property, those that build or alter their calls themselves
included (`samplecheck.inputs.drawing.accepted`), runs on the fake penalties plug-in
`repetition_only` (tests/cover/fake_backends.py), which raises on any call with a frequency or
presence penalty, and passes; the cases a family states for such calls (`case_of`) describe
them."""

import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings

from samplecheck.registry.matrix import RECORDS
from samplecheck.tests.cover.fake_backends import OutsideAccepts, repetition_only

ROOT = Path(__file__).resolve().parents[2]
TARGET = "penalties=samplecheck.tests.cover.fake_backends:repetition_only"
# Its combos at one dtype and layout (acceptance depends on neither), and its error inputs.
SELECTED = "penalties-repetition_only and not bf16 and not fp16 and not padded64 and not stride and not offset"


def test_the_fake_raises_outside_its_cases():
    logits = torch.zeros(2, 4)
    ids = torch.tensor([[1], [2]])
    args = {"prompt_token_ids": ids, "output_token_ids": ids, "repetition_penalty": torch.ones(2),
            "frequency_penalty": torch.tensor([0.0, 0.5]), "presence_penalty": torch.zeros(2)}
    with pytest.raises(OutsideAccepts):
        repetition_only(logits, **args)


def test_every_property_passes_on_a_partial_plug_in(device):
    command = [sys.executable, "-m", "pytest", "tests/cover", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
               f"--sc-device={device.type}", "--sc-profile=ci", "--sc-packs=none", "--sc-backend-only",
               "--sc-backend", TARGET, "-k", SELECTED]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "passed" in result.stdout.splitlines()[-1]


# The records whose case family states the case of an altered call (`make_args.case_of`).
DESCRIBED = ("top_k_top_p", "top_k_top_p_sample", "min_p", "min_p_sample", "temperature", "softmax",
             "gumbel_sample", "penalties", "logit_bias", "bad_words")


def _unpadded(value):
    """A call's arguments as the contract reads them: id lists without trailing -1 padding
    (trailing empty inner lists dropped), floats with NaN as a string (NaN pads compare)."""
    if isinstance(value, torch.Tensor):
        return _unpadded(value.tolist()) if value.is_floating_point() else _trim(value.tolist())
    if isinstance(value, dict):
        return {key: _unpadded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_unpadded(item) for item in value]
    return "nan" if isinstance(value, float) and math.isnan(value) else value


def _trim(ids):
    if not isinstance(ids, list):
        return ids
    rows = [_trim(item) for item in ids]
    while rows and rows[-1] in (-1, []):
        rows.pop()
    return rows


@pytest.mark.parametrize("record", DESCRIBED)
def test_case_of_describes_the_altered_call(record, budget):
    """`case_of(case, logits, args)` is a case whose arguments are `args` up to -1 padding: on
    drawn cases, with rows off (the off encodings' first value written into row 0)."""
    info = RECORDS.get(record) or pytest.skip(f"record {record} is not registered")
    case_of = info.make_args.case_of

    @settings(max_examples=20, derandomize=True, database=None, deadline=None)
    @given(case=info.cases(budget))
    def round_trip(case):
        logits = torch.zeros(case.logits.batch, case.logits.vocab)
        args = info.make_args(case, logits)
        for off in info.off_encodings[:1]:
            args = off.apply(args, 0, logits.size(0), logits.size(1), logits.device) or args
        again = info.make_args(case_of(case, logits, args), logits)
        assert _unpadded(again) == _unpadded(args)

    round_trip()
