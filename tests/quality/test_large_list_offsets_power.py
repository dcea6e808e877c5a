"""The far-lists property's power, at the small distance it runs at on a CPU: a kernel whose
list offset row * width wraps at that distance (`% FAR`, the analogue of an int32 wrap at
2**31, which no CPU run can reach) is caught by the property's own checks
(tests/cover/test_large_list_offsets.py), on each record's first regression example. A wrap
in the guard kernel (the device value check) lets the invalid id of the far row through
(check 2); a wrap in the kernel that applies the lists reads a filler row's padding instead
of the row's list (check 1). The correct kernel passes both on the same cases."""

from dataclasses import dataclass

import pytest
import torch

from samplecheck.harness.plugins import mutant_backend
from samplecheck.inputs.recipes import materialize
from samplecheck import mutants
from samplecheck.mutants import Mutant
from samplecheck.registry.matrix import RECORDS, Combo
from samplecheck.tests.cover.test_large_list_offsets import SMALL, check_far_rows_checked, check_far_rows_compute

FAR = SMALL.far


@dataclass(frozen=True)
class Wrap:
    """A list offset `offset` (kernel source) taken modulo FAR in the line `line`; `check`:
    the check that must catch it."""

    kernel: str
    module: str
    entry: str
    param: str
    line: str
    offset: str
    check: str

    def mutant(self, name: str) -> Mutant:
        wrapped = self.line.replace(self.offset, f"({self.offset}) % {FAR}")
        return Mutant(name, self.kernel, f"samplecheck.kernels.{self.module}", self.entry, self.line, wrapped,
                      f"{self.param} offset wraps at {FAR}", "int32 wrap at 2**31")


COMPUTE, CHECKED = "far rows compute right", "far rows are checked"
WRAPS = {
    "logit_bias-guard": Wrap("logit_bias", "logit_bias", "apply_logit_bias", "allowed_token_ids",
                             "list_has_bad_id(allowed_ptr + row * A, A, V, -1, BLOCK)", "row * A", CHECKED),
    "logit_bias-apply": Wrap("logit_bias", "logit_bias", "apply_logit_bias", "allowed_token_ids",
                             "_load_ids(allowed_ptr + row * A, tl.arange(0, A_BLOCK), A, V)", "row * A", COMPUTE),
    "bad_words-guard": Wrap("bad_words", "bad_words", "apply_bad_words", "bad_words",
                            "list_has_bad_id(words_ptr + row * L, L, V, -1, BLOCK)", "row * L", CHECKED),
    "bad_words-apply": Wrap("bad_words", "bad_words", "apply_bad_words", "bad_words",
                            "word_ptr = words_ptr + pair[:, None] * T", "pair[:, None] * T", COMPUTE),
    "penalties-guard": Wrap("penalties", "penalties", "apply_penalties", "prompt_token_ids",
                            "list_has_bad_id(prompt_ptr + row * P, P, V, V, BLOCK)", "row * P", CHECKED),
    "penalties-apply": Wrap("penalties", "penalties", "apply_penalties", "prompt_token_ids",
                            "tl.load(prompt_ptr + row * P + i,", "row * P", COMPUTE),
}


def outcomes(combo: Combo, param: str) -> dict[str, str | None]:
    """{check: None if it passed, else its failure} for the record's first regression example."""
    case = combo.info.examples[0].case
    values = materialize(case.logits, combo.dtype, torch.device("cpu"))
    args = combo.info.make_args(case, values)
    checks = {COMPUTE: lambda: check_far_rows_compute(combo, values, args, param, SMALL),
              CHECKED: lambda: check_far_rows_checked(combo, values, args, param, SMALL)}
    found = {}
    for name, check in checks.items():
        try:
            check()
            found[name] = None
        except (AssertionError, ValueError, pytest.fail.Exception) as failure:  # a wrong output or error, or none
            found[name] = f"{type(failure).__name__}: {str(failure)[:300]}"
    return found


@pytest.mark.parametrize("wrap", list(WRAPS), ids=list(WRAPS))
def test_a_list_offset_wrapping_at_the_distance_is_caught(wrap, monkeypatch):
    spec = WRAPS[wrap]
    info = RECORDS[spec.kernel]
    ours = Combo(info, info.backends[0], torch.bfloat16, "contig")
    assert outcomes(ours, spec.param) == {COMPUTE: None, CHECKED: None}
    name = f"far-lists-{wrap}"
    monkeypatch.setitem(mutants.MUTANTS, name, spec.mutant(name))
    kernel, backend = mutant_backend(name)
    found = outcomes(Combo(info, backend, torch.bfloat16, "contig"), spec.param)
    print(f"\n{wrap}: {found}")
    assert found[spec.check] is not None, f"{wrap}: {spec.param} offsets wrapping at {FAR} pass '{spec.check}'"
