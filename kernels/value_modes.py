"""How value checks run: the mode (eager, deferred, captured, off) and the deferred calls
whose errors are raised later (`samplecheck.kernels.validation` states the contract)."""

import contextlib
import contextvars
import functools
import os
import threading

import torch

MODES = ("auto", "eager", "deferred", "off")
MODE_ENV = "SAMPLECHECK_VALUE_CHECKS"
# Guard flags per pool (two pools per device take turns), and the deferred calls whose
# guards (argument tensors included) are kept to describe a failure with the eager message.
POOL_SLOTS = 1024
RECENT = 32

_MODE = contextvars.ContextVar("samplecheck_value_checks", default=None)
_ENCLOSING_FLAG = contextvars.ContextVar("samplecheck_enclosing_flag", default=None)
_DEVICE_TYPES: dict = {}  # device, as given to value_check_mode -> its type (torch.device(d).type costs each call)


def _configured_mode() -> str:
    mode = _MODE.get() or os.environ.get(MODE_ENV, "auto")
    if mode not in MODES:
        raise ValueError(f"{MODE_ENV} must be one of {', '.join(MODES)}; got {mode!r}")
    return mode


@functools.cache
def _cuda_available() -> bool:
    """torch.cuda.is_available(), asked once per process: its answer cannot change while the
    process runs, and asking reads the environment and counts devices each time."""
    return torch.cuda.is_available()


def capturing() -> bool:
    """True while the current CUDA stream captures a graph."""
    return _cuda_available() and torch.cuda.is_current_stream_capturing()


def value_check_mode(device: torch.device) -> str:
    """How value checks run now for tensors on `device`: eager, deferred, captured or off
    (module docstring)."""
    mode = _configured_mode()
    if mode == "off":
        return "off"
    if capturing():
        return "captured"
    if mode == "auto":
        kind = _DEVICE_TYPES.get(device)
        if kind is None:
            kind = _DEVICE_TYPES[device] = torch.device(device).type
        return "eager" if kind == "cpu" else "deferred"
    return mode


def values_checked() -> bool:
    """False inside `unchecked_values()` (or with SAMPLECHECK_VALUE_CHECKS=off)."""
    return _configured_mode() != "off"


@contextlib.contextmanager
def value_checks(mode: str):
    """Within this block, value checks run in `mode` (one of MODES)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    token = _MODE.set(mode)
    try:
        yield
    finally:
        _MODE.reset(token)


@contextlib.contextmanager
def unchecked_values(flag: torch.Tensor | None = None):
    """Within this block, entry points skip their value checks (layout checks still run).
    `flag`: the guard flag of an enclosing call that checked the values already; the
    block's kernels then write nothing when it is set."""
    mode_token, flag_token = _MODE.set("off"), _ENCLOSING_FLAG.set(flag)
    try:
        yield
    finally:
        _ENCLOSING_FLAG.reset(flag_token)
        _MODE.reset(mode_token)


def enclosing_flag() -> torch.Tensor | None:
    """The guard flag set by an enclosing `unchecked_values(flag)`, else None."""
    return _ENCLOSING_FLAG.get()


class _FlagPool:
    """POOL_SLOTS int32 flags on one device, zeroed together and handed out one per deferred
    call (no allocation per call; `slots` holds each flag's [1] view, made once with the
    pool). `calls` holds [slot, guard, check names, op] of the deferred calls: only the
    RECENT newest keep their guard (to describe a failure with the eager message; names and
    op are then None, read from the guard when needed); older ones keep the guard's names
    list (never changed once settled) and op."""

    def __init__(self, device: torch.device):
        self.flags = torch.zeros(POOL_SLOTS, dtype=torch.int32, device=device)
        self.slots = self.flags.split(1)
        self.used = 0
        self.calls: list = []
        self.host = self.event = None

    def take(self, guard) -> torch.Tensor:
        slot = self.used
        self.used = slot + 1
        calls = self.calls
        calls.append([slot, guard, None, None])
        if len(calls) > RECENT:
            old = calls[-RECENT - 1]
            if old[1] is not None:
                old[1:] = None, old[1].names, old[1].op
        return self.slots[slot]

    def ship(self) -> None:
        """Start copying the flags to the host (no wait)."""
        if self.flags.device.type == "cuda":
            self.host = torch.empty(POOL_SLOTS, dtype=torch.int32, pin_memory=True)
            self.host.copy_(self.flags, non_blocking=True)
            self.event = torch.cuda.Event()
            self.event.record()
        else:
            self.host = self.flags

    def shipped(self) -> bool:
        return self.event is None or self.event.query()

    def reset(self) -> None:
        self.flags.zero_()
        self.used, self.calls, self.host, self.event = 0, [], None, None

    def raise_failed(self) -> None:
        """Raise the first failed call's error; the pool must be shipped and on the host."""
        if self.event is not None:
            self.event.synchronize()
        calls, bits = self.calls, self.host.tolist() if self.calls else []
        self.calls = []
        for slot, guard, names, op in calls:
            failed = bits[slot]
            if not failed:
                continue
            if guard is not None:
                guard.describe()
                names, op = guard.names, guard.op
            which = ", ".join(name for position, name in enumerate(names) if failed >> position & 1)
            raise ValueError(f"{op}: the value check of {which} failed in a deferred call, which wrote nothing; "
                             "its values are no longer known (changed since, or more than "
                             f"{RECENT} guarded calls back)")


_POOLS: dict = {}  # device -> [active pool, shipped pool or None]
_POOLS_LOCK = threading.Lock()  # calls from several threads take distinct slots


def take_flag(device: torch.device, guard) -> torch.Tensor:
    """A zeroed int32 flag [1] for a guarded call on `device`. `guard` None (the caller's
    mode is "captured": a graph is being captured): a fresh zeroed tensor (its memset is
    captured too, so every replay starts clear), recorded nowhere. Else (mode "deferred") a
    slot of the device's active pool, `guard` recorded for `raise_pending`; when the pool is
    full it is shipped to the host and the other pool, resolved first, takes its place: a
    failed check of an earlier call is raised then."""
    if guard is None:
        return torch.zeros(1, dtype=torch.int32, device=device)
    with _POOLS_LOCK:
        pools = _POOLS.get(device)
        if pools is None:
            pools = _POOLS[device] = [_FlagPool(device), None]
        active, shipped = pools
        if active.used == POOL_SLOTS:
            active.ship()
            spare = shipped if shipped is not None else _FlagPool(device)
            pools[:] = [spare, active]
            if shipped is not None:
                try:
                    shipped.raise_failed()
                finally:
                    shipped.reset()
            active = spare
        return active.take(guard)


def raise_ready() -> None:
    """Raise the error of an earlier deferred call found in a shipped pool whose copy has
    reached the host (no waiting). For callers in mode eager or deferred only, so never while
    a graph is captured (its event query would break the capture)."""
    for pools in _POOLS.values():
        shipped = pools[1]
        if shipped is not None and shipped.calls and shipped.shipped():
            shipped.raise_failed()


def raise_pending() -> None:
    """Wait for every deferred call's flag and raise the first failure's error (the error
    the eager check would have raised, naming the parameter and its range, when the call is
    among the RECENT newest). Every call recorded so far is resolved, both pools' (the shipped
    one's calls are the older): a later failure is not raised, then or by a later call.
    Nothing while a graph is captured."""
    if capturing():
        return
    first = None
    for pools in _POOLS.values():
        active, shipped = pools
        for pool in (shipped, active):
            if pool is None or not pool.calls:
                continue
            if pool.host is None:
                pool.ship()
            try:
                pool.raise_failed()
            except ValueError as error:
                first = first if first is not None else error
            finally:
                if pool is active:
                    pool.reset()
    if first is not None:
        try:
            raise first
        finally:
            # The error's traceback holds this frame: a local naming the error would make a
            # reference cycle, and keep the caller's frames and their tensors (device memory)
            # alive until Python's cyclic collector runs.
            first = None


def drop_pending() -> None:
    """Resolve every deferred call recorded so far, as `raise_pending` does, and drop their
    failures unraised: for a harness starting work whose own calls alone may raise (a test's
    next example). Nothing while a graph is captured."""
    with contextlib.suppress(ValueError):
        raise_pending()
