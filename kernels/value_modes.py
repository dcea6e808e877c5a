"""How value checks run: the mode (eager, deferred, captured, off) and the deferred calls
whose errors are raised later (`samplecheck.kernels.validation` states the contract)."""

import contextlib
import contextvars
import os

import torch

MODES = ("auto", "eager", "deferred", "off")
MODE_ENV = "SAMPLECHECK_VALUE_CHECKS"
# Deferred calls kept before the oldest is waited for (bounds the host memory they hold).
MAX_PENDING = 64

_MODE = contextvars.ContextVar("samplecheck_value_checks", default=None)
_ENCLOSING_FLAG = contextvars.ContextVar("samplecheck_enclosing_flag", default=None)
_PENDING: list = []


def _configured_mode() -> str:
    mode = _MODE.get() or os.environ.get(MODE_ENV, "auto")
    if mode not in MODES:
        raise ValueError(f"{MODE_ENV} must be one of {', '.join(MODES)}; got {mode!r}")
    return mode


def capturing() -> bool:
    """True while the current CUDA stream captures a graph."""
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def value_check_mode(device: torch.device) -> str:
    """How value checks run now for tensors on `device`: eager, deferred, captured or off
    (module docstring)."""
    mode = _configured_mode()
    if mode == "off":
        return "off"
    if capturing():
        return "captured"
    if mode == "auto":
        return "eager" if torch.device(device).type == "cpu" else "deferred"
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


class _Deferred:
    """A deferred call's flag on its way to the host, and its guard (to describe a failure)."""

    def __init__(self, flag: torch.Tensor, guard):
        self.guard = guard
        if flag.device.type == "cuda":
            self.host = torch.empty(1, dtype=torch.int32, pin_memory=True)
            self.host.copy_(flag, non_blocking=True)
            self.event = torch.cuda.Event()
            self.event.record()
        else:
            self.host, self.event = flag, None

    def ready(self, wait: bool) -> bool:
        if self.event is None:
            return True
        if wait:
            self.event.synchronize()
            return True
        return self.event.query()

    def raise_if_failed(self) -> None:
        bits = int(self.host.item())
        if not bits:
            return
        self.guard.describe()
        failed = [name for position, name in enumerate(self.guard.launch_names()) if bits >> position & 1]
        raise ValueError(f"{self.guard.op}: the value check of {', '.join(failed)} failed in an earlier call "
                         "(which wrote nothing); the values have changed since, so the bad one is not known")


def defer(flag: torch.Tensor, guard) -> None:
    """Record a deferred call (`samplecheck.kernels.guard.ValueGuard.settle`)."""
    _PENDING.append(_Deferred(flag, guard))
    if len(_PENDING) > MAX_PENDING:
        _resolve(wait_for=1)


def _resolve(wait_for: int) -> None:
    """Resolve deferred calls in order: the first `wait_for` waiting for their flags, the
    rest only if already on the host; raise the first failure's error."""
    while _PENDING:
        deferred = _PENDING[0]
        if not deferred.ready(wait=wait_for > 0):
            return
        wait_for -= 1
        _PENDING.pop(0)
        deferred.raise_if_failed()


def raise_ready() -> None:
    """Raise the error of an earlier deferred call whose failed flag has reached the host
    (no waiting; nothing while a graph is captured)."""
    if _PENDING and not capturing():
        _resolve(wait_for=0)


def raise_pending() -> None:
    """Wait for every deferred call's flag and raise the first failure's error (the error
    the eager check would have raised, naming the parameter and its range)."""
    if _PENDING and not capturing():
        _resolve(wait_for=len(_PENDING))
