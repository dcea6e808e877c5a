"""Triton helpers of the selection kernels (`samplecheck.kernels.top_k_top_p` and the paths that
split rows over programs): a row's k and p as the kernels read them, and the call's value checks
over all of them, made by the kernels themselves where the checks are deferred or captured
(`samplecheck.kernels.validation`)."""

import triton
import triton.language as tl

from samplecheck.kernels.guard import CHECK_BLOCK, INT64_MAX_JIT, record_failed, rows_in_range


@triton.jit
def row_k_p(k_ptr, p_ptr, row, V, HAS_K: tl.constexpr, HAS_P: tl.constexpr):
    """The row's k as an int32 (V where top-k is off: k <= 0 or k >= V) and p as fp32 (1.0
    without p)."""
    k = tl.zeros([], dtype=tl.int32) + V  # a tensor also when V == 1 is specialized to a constant
    if HAS_K:
        k_row = tl.load(k_ptr + row)
        k = tl.where((k_row > 0) & (k_row < V), k_row, V).to(tl.int32)
    p = 1.0
    if HAS_P:
        p = tl.load(p_ptr + row).to(tl.float32)
    return k, p


@triton.jit
def failed_value_checks(k_ptr, p_ptr, B, HAS_K: tl.constexpr, HAS_P: tl.constexpr):
    """The call's value checks over all B rows: bit 1 when a k is below -1, then the next
    bit when a p is outside (0, 1] (NaN included); 0 when both hold."""
    failed = tl.zeros([], dtype=tl.int32)
    p_bit = 1
    if HAS_K:
        failed |= tl.where(rows_in_range(k_ptr, B, -1, INT64_MAX_JIT, False, False, CHECK_BLOCK), 0, 1)
        p_bit = 2
    if HAS_P:
        failed |= tl.where(rows_in_range(p_ptr, B, 0.0, 1.0, True, False, CHECK_BLOCK), 0, p_bit)
    return failed


@triton.jit
def may_write(k_ptr, p_ptr, B, guard_ptr, check, guarded, HAS_K: tl.constexpr, HAS_P: tl.constexpr):
    """Whether a program of the call may write: where `guarded` (a constexpr or a runtime bool;
    unguarded, `guard_ptr` is never read), the guard flag clear and, where the kernel makes the
    call's value checks itself (`check`), every k and p in range over all B rows, from cache
    (program (0, 0) records a failure in the flag)."""
    clear = True
    if guarded:
        clear = tl.load(guard_ptr) == 0
        if check:
            failed = failed_value_checks(k_ptr, p_ptr, B, HAS_K, HAS_P)
            record_failed(guard_ptr, failed)
            clear = clear & (failed == 0)
    return clear
