"""Device-side value checks: the guard flag a call's kernels read before they write.

A `ValueGuard` collects the value checks of one call (ranges of per-row parameters, token
ids, ...). Each check has two forms:
- `describe`: the eager check on the host; it reads values back (one device sync) and
  raises the error that names the caller's parameter and its allowed range;
- device checks: launches that set the check's bit in an int32 flag [1] where the same
  condition fails, with no host synchronisation: one launch of `_ranges_guard_kernel` for all
  the guard's range checks of per-row parameters (`RangeCheck`: each takes a slot of its
  values' dtype, `RANGE_SLOTS`; only a guard with more checks of a dtype than the kernel has
  slots for it launches it again, for the rest), and one fused per-row kernel for all the
  checks of an op's id lists (`ValueGuard.fused`). An op's own kernel may make its call's
  checks instead (`settle(in_kernel=True)`): every program that writes checks the whole batch
  itself (`rows_in_range`, or the op's fused check over all rows at once) and writes nothing
  where a check fails, and program (0, 0) records the failed checks' bits (`record_failed`);
  so a call is one launch. For id lists the whole batch's lists must hold at most
  INLINE_CHECK_IDS ids: every program reads them all, so a larger call launches its fused
  check first.
`settle()` runs them as `samplecheck.kernels.value_modes.value_check_mode()` says: "eager"
runs the describers now (the call raises before it writes); "deferred" and "captured" launch
the device checks and return the flag (a slot of a pool, `samplecheck.kernels.value_modes`),
which every kernel of the call loads first: a set flag makes the kernel write nothing, so a
bad value changes nothing. "deferred" also records the call, so that `raise_pending()` (or a
later call, once the pool has reached the host) raises the describer's error; "captured" (inside CUDA graph capture)
records nothing: a replay with a bad value writes nothing and raises nothing. "off" returns
the flag of an enclosing call (the sampler's, which checked every field) or None.
"""

import functools
import itertools
from collections.abc import Callable
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from samplecheck.kernels import value_modes
from samplecheck.kernels.launching import jit
from samplecheck.kernels.runtime import cdiv

BLOCK = 1024
PAD_ID = -1
FLOAT32_MAX = 3.4028234663852886e38
FLOAT32_MAX_JIT = tl.constexpr(FLOAT32_MAX)  # the same, as a constant inside kernels
CHECK_BLOCK = tl.constexpr(1024)  # values per step of a kernel's check of its per-row parameters (`rows_in_range`)
INT64_MAX_JIT = tl.constexpr(2**63 - 1)  # the upper end of a count's or position's range, inside kernels
# int32 flag: one bit per device check of a call.
MAX_CHECKS = 31
# The most ids (the whole batch's lists, as the op counts them) for which an op's kernel
# checks its call's id lists itself, in every program (module docstring). Beyond, the fused
# check (one program per row) costs less than every program reading every list, and its
# launch is small beside the op's own work. On the H200 every program of logit_bias's kernel
# spent about 1 us a row on 16 bias ids (64 rows: 71 us inline, 11 us with the fused check
# launched first; docs/gpu-runs-2026-12-04.md, session 28): 1024 keeps one row's 768 penalty ids inline.
# On the CPU, small enough that the suite's drawn lists take both paths.
INLINE_CHECK_IDS = {"cuda": 1024, "cpu": 64}
# The slots of `_ranges_guard_kernel`, by their values' dtype, in its parameter order (its
# annotations follow these dtypes): the sampler's three fp32 range checks (temperature, min_p,
# top_p), top_k (int32 or int64) and positions (int64) take one launch.
RANGE_SLOTS = (torch.float32, torch.float32, torch.float32, torch.int32, torch.int64, torch.int64)
SLOTS_OF = {dtype: tuple(i for i, d in enumerate(RANGE_SLOTS) if d == dtype) for dtype in RANGE_SLOTS}
# `how` = the check's index in its guard (< MAX_CHECKS: its bit), | LO_OPEN and | HI_OPEN where
# that end of the range is open.
LO_OPEN, HI_OPEN = 1 << 5, 1 << 6
LO_OPEN_JIT = tl.constexpr(LO_OPEN)  # the same, inside kernels
HI_OPEN_JIT = tl.constexpr(HI_OPEN)


@triton.jit
def in_range(v, lo, hi, lo_open, hi_open):
    """lo <(=) v <(=) hi, elementwise, the ends open where `lo_open` / `hi_open` (constant or
    not); False for NaN."""
    above = tl.where(lo_open, v > lo, v >= lo)
    below = tl.where(hi_open, v < hi, v <= hi)
    return above & below


@triton.jit
def _failed_bit(values_ptr, n, lo, hi, how, offs):
    """1 << (how & 31) if one of the values at `offs` (those below n) is outside lo <(=) v <(=) hi
    or NaN, else 0; `how & LO_OPEN` / `how & HI_OPEN` make that end open."""
    live = offs < n
    v = tl.load(values_ptr + offs, mask=live)
    ok = in_range(v, lo, hi, (how & LO_OPEN_JIT) != 0, (how & HI_OPEN_JIT) != 0)
    return tl.max((live & ~ok).to(tl.int32), axis=0) << (how & 31)


# Slot i's parameters are x{i}, n{i}, lo{i}, hi{i} and how{i}, for the 6 slots of RANGE_SLOTS.
@jit(do_not_specialize=["flag_ptr"] + [f"{arg}{i}" for i in range(6) for arg in ("x", "n", "lo", "hi", "how")])
def _ranges_guard_kernel(flag_ptr,
                         x0, n0: tl.int64, lo0: tl.float32, hi0: tl.float32, how0: tl.int32,
                         x1, n1: tl.int64, lo1: tl.float32, hi1: tl.float32, how1: tl.int32,
                         x2, n2: tl.int64, lo2: tl.float32, hi2: tl.float32, how2: tl.int32,
                         x3, n3: tl.int64, lo3: tl.int64, hi3: tl.int64, how3: tl.int32,
                         x4, n4: tl.int64, lo4: tl.int64, hi4: tl.int64, how4: tl.int32,
                         x5, n5: tl.int64, lo5: tl.int64, hi5: tl.int64, how5: tl.int32,
                         BLOCK: tl.constexpr):
    """Slot i holds one range check (`launch_range_checks`): its n values x of dtype
    RANGE_SLOTS[i], its bounds lo and hi, and `how` (module constants); an idle slot has n = 0.
    ORs into *flag_ptr the bit of every slot with a value in this program's block outside its
    range. The annotations fix each scalar's type (an int's would otherwise follow its
    magnitude, i32 or i64, one compiled variant each): float bounds compare in fp32, int bounds
    in int64, exactly."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    failed = (_failed_bit(x0, n0, lo0, hi0, how0, offs) | _failed_bit(x1, n1, lo1, hi1, how1, offs)
              | _failed_bit(x2, n2, lo2, hi2, how2, offs) | _failed_bit(x3, n3, lo3, hi3, how3, offs)
              | _failed_bit(x4, n4, lo4, hi4, how4, offs) | _failed_bit(x5, n5, lo5, hi5, how5, offs))
    if failed != 0:
        tl.atomic_or(flag_ptr, failed)


def check_range(name: str, value: torch.Tensor, ok: torch.Tensor, allowed: str) -> None:
    """Raise `ValueError("{name} must be {allowed}; got {first value where not ok}")` unless
    `ok` (a bool tensor over `value`, False for NaN where NaN is out of range) holds everywhere."""
    if value.numel() and not bool(ok.all()):
        raise ValueError(f"{name} must be {allowed}; got {value[~ok][0].item()}")


class RangeCheck(NamedTuple):
    """The check lo <(=) v <(=) hi of a contiguous tensor of a dtype of RANGE_SLOTS (NaN fails):
    int bounds in [-2**63, 2**63) for integer values, compared exactly; numbers compared in fp32
    for float32 values. `describe()` is the eager check of parameter `name`, raising
    `check_range`'s error with its `allowed` range; its device form is a slot of the guard's
    launch of `_ranges_guard_kernel` (`launch_range_checks`)."""

    values: torch.Tensor
    lo: float | int
    hi: float | int
    lo_open: bool = False
    hi_open: bool = False
    name: str = ""
    allowed: str = ""

    def describe(self) -> None:
        values = self.values
        above = values > self.lo if self.lo_open else values >= self.lo
        below = values < self.hi if self.hi_open else values <= self.hi
        check_range(self.name, values, above & below, self.allowed)


@functools.cache
def _idle_slots(device: torch.device) -> tuple:
    """The arguments of each slot of `_ranges_guard_kernel` left idle: n = 0 over an empty tensor of
    the slot's dtype (it holds no memory and is made once per device: no allocation per call)."""
    return tuple((torch.empty(0, dtype=dtype, device=device), 0, zero, zero, 0)
                 for dtype, zero in ((d, 0.0 if d.is_floating_point else 0) for d in RANGE_SLOTS))


def launch_range_checks(flag: torch.Tensor, device: torch.device, ranges: list[tuple[int, RangeCheck]]) -> None:
    """Make the range checks `ranges` ((index in the guard, check)) on `flag` (on `device`):
    each non-empty check takes the next free slot of its values' dtype in one launch of
    `_ranges_guard_kernel`; only checks beyond RANGE_SLOTS' slots of their dtype take another
    launch (and so on). Empty checks fail nothing and take no slot; no checks, no launch."""
    while ranges:
        args, longest, ranges = _fill_slots(device, ranges)
        if longest:
            _ranges_guard_kernel[(cdiv(longest, BLOCK),)](flag, *args, BLOCK=BLOCK)


def _fill_slots(device: torch.device, ranges: list[tuple[int, RangeCheck]]) -> tuple[list, int, list]:
    """One launch's slots for `ranges` (`launch_range_checks`): (the slots' arguments, flat; the
    most values a slot holds, 0 if none; the checks left for another launch)."""
    slots, rest, longest = list(_idle_slots(device)), [], 0
    free = {dtype: iter(indices) for dtype, indices in SLOTS_OF.items()}
    for index, check in ranges:
        values = check.values
        n = values.numel()
        if not n:
            continue
        free_slots = free.get(values.dtype)
        if free_slots is None:
            raise TypeError(f"range checks take {', '.join(map(str, SLOTS_OF))} values; "
                            f"{check.name or 'these'} are {values.dtype}")
        slot = next(free_slots, None)
        if slot is None:
            rest.append((index, check))
            continue
        slots[slot] = values, n, check.lo, check.hi, index | check.lo_open * LO_OPEN | check.hi_open * HI_OPEN
        longest = max(longest, n)
    return list(itertools.chain.from_iterable(slots)), longest, rest


class ValueGuard:
    """The value checks of one call (module docstring), in the order they are added; check i
    owns bit 1 << i of the flag. `names[i]` is check i's parameter name and `describers[i]`
    its eager form; both lists only grow, and not once the guard is settled."""

    __slots__ = ("device", "op", "names", "describers", "launches", "ranges", "on_device")

    def __init__(self, device: torch.device, op: str):
        self.device = device
        self.op = op
        self.names: list[str] = []
        self.describers: list[Callable[[], None]] = []
        self.launches: list[tuple[int, Callable]] = []  # (first check index, launch(flag, first index))
        self.ranges: list[tuple[int, RangeCheck]] = []  # (check index, range check)
        self.on_device = False

    def check(self, name: str, describe: Callable[[], None], device_check: RangeCheck) -> None:
        """Add the range check of parameter `name`: `describe()` raises its error eagerly;
        `device_check` sets the check's bit where the check fails (a slot of the guard's one
        launch of `_ranges_guard_kernel`)."""
        self.ranges.append((len(self.names), device_check))
        self.names.append(name)
        self.describers.append(describe)

    def fused(self, checks: list[tuple[str, Callable[[], None]]], launch: Callable) -> None:
        """Add several checks (name, describe) made by ONE launch(flag, first): it sets bit
        1 << (first + i) where check i fails."""
        self.launches.append((len(self.names), launch))
        for name, describe in checks:
            self.names.append(name)
            self.describers.append(describe)

    def describe(self) -> None:
        """Run every eager check in order (the first failing one raises)."""
        for describe in self.describers:
            describe()

    def check_now(self) -> None:
        """For implementations with no guarded kernel (the PyTorch fallbacks, third-party
        adapters): the eager checks, which synchronise, unless the mode is off or captured
        (where a sync would break the capture: such an implementation is then unchecked)."""
        if value_modes.value_check_mode(self.device) in ("eager", "deferred"):
            value_modes.raise_ready()
            self.describe()

    def settle(self, in_kernel: bool = False) -> torch.Tensor | None:
        """Run the checks as the current mode says (module docstring); returns the flag the
        call's kernels load (None: unguarded). `in_kernel`: the call's kernel runs and makes
        every check itself (check i on bit 1 << i), so none is launched here;
        `self.on_device` then says whether the kernel must make them (deferred or captured,
        and the guard holds a check)."""
        mode = value_modes.value_check_mode(self.device)
        if mode == "off" or mode == "eager":
            self.on_device = False
            if mode == "eager":
                value_modes.raise_ready()
                self.describe()
            return value_modes.enclosing_flag()
        checks = len(self.names)
        self.on_device = in_kernel and checks > 0
        deferred = mode == "deferred"  # else captured: nothing is recorded, nothing raised
        if deferred:
            value_modes.raise_ready()
        if checks > MAX_CHECKS:
            raise RuntimeError(f"{self.op}: {checks} checks exceed the flag's {MAX_CHECKS} bits")
        flag = value_modes.take_flag(self.device, self if deferred else None)
        if not in_kernel:
            for first, launch in self.launches:
                launch(flag, first)
            if self.ranges:
                launch_range_checks(flag, self.device, self.ranges)
        enclosing = value_modes.enclosing_flag()
        if enclosing is not None:
            flag.bitwise_or_(enclosing)
        return flag


@triton.jit
def list_has_bad_id(ids_ptr, length, V, also, BLOCK: tl.constexpr):
    """True when an entry of the list (`length` ids) is in none of [0, V), -1 and `also`."""
    bad = tl.zeros([], dtype=tl.int32)
    for start in range(0, length, BLOCK):
        k = start + tl.arange(0, BLOCK)
        ids = tl.load(ids_ptr + k, mask=k < length, other=-1)
        bad += tl.sum(((ids != -1) & (ids != also) & ((ids < 0) | (ids >= V))).to(tl.int32), axis=0)
    return bad > 0


@triton.jit
def rows_in_range(values_ptr, n, lo, hi, LO_OPEN: tl.constexpr, HI_OPEN: tl.constexpr, BLOCK: tl.constexpr):
    """True when every one of the n values satisfies lo <(=) v <(=) hi (NaN does not): the
    in-kernel form of `RangeCheck`, for a kernel that checks its own per-row parameter."""
    bad = tl.zeros([], dtype=tl.int32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        live = offs < n
        v = tl.load(values_ptr + offs, mask=live)
        bad += tl.sum((live & ~in_range(v, lo, hi, LO_OPEN, HI_OPEN)).to(tl.int32), axis=0)
    return bad == 0


def guard_pointer(flag: torch.Tensor | None, own: torch.Tensor) -> torch.Tensor:
    """What a kernel whose guard is a runtime bool takes as its flag pointer: the call's flag, or
    without one an int32 view of `own` (a buffer of the call's, never read then), so that a
    guarded and an unguarded call pass pointers of one type and alignment and share a compiled
    kernel."""
    return flag if flag is not None else own.view(torch.int32)


@triton.jit
def flag_clear(guard_ptr, GUARDED: tl.constexpr):
    """Whether a program may write as far as the flag goes: no flag (not GUARDED), or one no
    check or earlier op has set."""
    clear = True
    if GUARDED:
        clear = tl.load(guard_ptr) == 0
    return clear


@triton.jit
def record_failed(guard_ptr, failed):
    """OR the failed checks' bits `failed` into the flag from program (0, 0) alone: a kernel
    making its call's checks itself computes the same bits in every program that needs them."""
    if (failed != 0) & (tl.program_id(0) == 0) & (tl.program_id(1) == 0):
        tl.atomic_or(guard_ptr, failed)
