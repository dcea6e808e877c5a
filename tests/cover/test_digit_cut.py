"""`cut_search.digit_cut` (the one-program ranking: the cut fixed a digit at a time) against
`cut_search.rank_cut` (every candidate compared with every other) on the same scratch, bracket
and predicate: both are the smallest key in [lo, hi] among the scratch's entries where the
predicate holds, hi where none does. Drawn cases cover what the kernels feed them: keys of each
logits dtype (low bits zero), runs of equal keys, entries below lo, lo and hi that are no
entry's key (a search's pivots) and share high bits, predicates that hold nowhere, everywhere or
only from the lowest entries up, by count and by mass, and mass limits that a sum meets exactly.
"""

import pytest
import torch
import triton
import triton.language as tl

from samplecheck.kernels.cut_search import digit_cut, rank_cut
from samplecheck.kernels.validation import LOGIT_DTYPES
from samplecheck.tests.cover.host_keys import order_key

pytestmark = pytest.mark.interpreter

CAP = 64  # scratch entries a case
CASES = 48  # cases a dtype and predicate
LOW_BITS = {torch.bfloat16: 16, torch.float16: 13, torch.float32: 0}


@triton.jit
def _both_cuts(scratch_ptr, case_ptr, limit_ptr, out_ptr, BY_MASS: tl.constexpr, CAP: tl.constexpr,
               LOW_BITS: tl.constexpr):
    """Program c: case c's cut by `digit_cut` at out[c, 0] and by `rank_cut` at out[c, 1]; a
    case is (n, lo, hi, count_hi, mass_hi, k) int64 and its fp32 row max is scratch[c, CAP]."""
    c = tl.program_id(0)
    row = scratch_ptr + c * (CAP + 1)
    n = tl.load(case_ptr + c * 6).to(tl.int32)
    lo = tl.load(case_ptr + c * 6 + 1).to(tl.int32)
    hi = tl.load(case_ptr + c * 6 + 2).to(tl.int32)
    count_hi = tl.load(case_ptr + c * 6 + 3).to(tl.int32)
    mass_hi = tl.load(case_ptr + c * 6 + 4)
    k = tl.load(case_ptr + c * 6 + 5).to(tl.int32)
    row_max = tl.load(row + CAP)
    limit = tl.load(limit_ptr + c)
    by_digits = digit_cut(row, n, lo, hi, count_hi, mass_hi, row_max, k, limit, BY_MASS, LOW_BITS, 4, 16)
    by_ranks = rank_cut(row, 0, 16, n, lo, hi, count_hi, mass_hi, row_max, k, limit, BY_MASS, 16, 16)
    tl.store(out_ptr + c * 2, by_digits)
    tl.store(out_ptr + c * 2 + 1, by_ranks)


def _cases(dtype: torch.dtype, by_mass: bool, gen: torch.Generator):
    """The scratch rows [CASES, CAP + 1] (the last column: the row max), the int64 case table and
    the fp32 mass limits (module docstring)."""
    scratch = torch.full((CASES, CAP + 1), float("-inf"))
    cases = torch.zeros((CASES, 6), dtype=torch.int64)
    limits = torch.zeros(CASES)
    for c in range(CASES):
        n = int(torch.randint(1, CAP + 1, (), generator=gen))
        x = torch.randn(n, generator=gen) * float(torch.rand((), generator=gen) * 4 + 0.01)
        if c % 3 == 0:
            x = x.round()  # runs of equal keys
        x = x.to(dtype).float()
        keys = order_key(x).sort().values
        lo_at, hi_at = sorted(torch.randint(0, n, (2,), generator=gen).tolist())
        lo, hi = int(keys[lo_at]), int(keys[hi_at])
        if c % 2 == 1:  # pivots: keys between (or just past) the entries' keys
            lo -= int(torch.randint(0, 1 << 20, (), generator=gen))
            hi += int(torch.randint(0, 1 << 12, (), generator=gen))
            hi = min(hi, 2**31 - 1)
        x = torch.where(order_key(x) > hi, float("-inf"), x)  # the scratch holds nothing above hi
        in_bracket = (order_key(x) >= lo) & (order_key(x) <= hi)
        count_hi = int(torch.randint(0, 4, (), generator=gen))
        k = int(torch.randint(0, int(in_bracket.sum()) + count_hi + 3, (), generator=gen))
        if c % 5 == 2:
            # The limit equals the mass above the entries just below the max, exactly: each entry
            # at the max weighs 2**40, and mass_hi has few significant bits.
            row_max = float(x.max())
            mass_hi = int(torch.randint(0, 2**14, (), generator=gen)) << 24
            limits[c] = mass_hi + int((x == row_max).sum()) * 2.0**40
        else:
            row_max = float(x.max()) + float(torch.rand((), generator=gen))
            weights = (torch.exp(x.double() - row_max) * 2.0**40).to(torch.int64)
            mass_hi = int(torch.randint(0, 2**38, (), generator=gen)) if c % 4 else 0
            limits[c] = float(torch.rand((), generator=gen) * 1.2) * (int(weights[in_bracket].sum()) + mass_hi)
        scratch[c, :n], scratch[c, CAP] = x, row_max
        cases[c] = torch.tensor([n, lo, hi, count_hi, mass_hi, k])
    return scratch, cases, limits


@pytest.mark.parametrize("by_mass", [False, True], ids=["count", "mass"])
@pytest.mark.parametrize("dtype", LOGIT_DTYPES, ids=str)
def test_digit_cut_equals_rank_cut(device, dtype, by_mass):
    gen = torch.Generator().manual_seed(LOGIT_DTYPES.index(dtype) * 2 + by_mass)
    scratch, cases, limits = (t.to(device) for t in _cases(dtype, by_mass, gen))
    out = torch.empty((CASES, 2), dtype=torch.int32, device=device)
    _both_cuts[(CASES,)](scratch, cases, limits, out, BY_MASS=by_mass, CAP=CAP, LOW_BITS=LOW_BITS[dtype])
    hi_taken = (out[:, 1].long() == cases[:, 2]).sum().item()
    assert 0 < hi_taken < CASES, f"the cases reach hi {hi_taken} times in {CASES}: draw both outcomes"
    torch.testing.assert_close(out[:, 0], out[:, 1], rtol=0, atol=0,
                               msg=lambda m: f"{dtype}, by {'mass' if by_mass else 'count'}: {m}")
