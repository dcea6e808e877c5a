"""One compile per Triton specialization across the processes of a suite run.

A run's processes (pytest-xdist workers, the kill table's hunts, compute-sanitizer's children)
share one Triton cache directory, but a process that misses the cache compiles at once. When
workers start on cells of one kernel together (the gate starts its slowest tests first, most of
them on the sampling pipeline), each compiles the same specializations on a CPU the others
need. `CompileOnce` is a Triton cache manager (Triton's `TRITON_CACHE_MANAGER` extension
point) that makes a process missing an entry take an exclusive lock on it while it compiles:
the others sleep until the entry is stored, then load it. A compile that raises never stores
its entry, and its lock lives as long as its traceback (pytest keeps a failed test's): the
suite's plugin releases what its process holds once each test's call is over
(`release_held`), and a wait is bounded by WAIT_LIMIT, past which the waiter compiles itself,
as plain Triton would.

samplecheck.tools.suite.compile_once_environment names it in the environment of the processes
samplecheck's commands start (a caller's own cache manager is kept). It acts only where Triton
compiles (a GPU run); under the interpreter Triton never reads it.
"""

import fcntl
import os
import time
import weakref

from triton.runtime.cache import FileCacheManager

LOCK_FILE = "samplecheck-compiling.lock"  # in the entry's own folder of the cache
WAIT_LIMIT = 60.0  # seconds a process waits for another's compile of one entry
POLL = 0.05  # seconds between tries of the lock
HOLDERS = weakref.WeakSet()  # this process's managers holding an entry's lock


class CompileOnce(FileCacheManager):
    """Triton's file cache manager, one compile per entry across processes: `get_group` on a
    miss locks the entry (or waits for whoever holds it, then reads again); `put_group`, which
    Triton calls once the compile is stored, releases it."""

    def __init__(self, key, override=False, dump=False):
        super().__init__(key, override=override, dump=dump)
        self._locks_entries = not (override or dump)
        self._lock = None

    def get_group(self, filename):
        group = super().get_group(filename)
        if group is not None or not self._locks_entries or self._lock is not None:
            return group
        self._lock = acquire(os.path.join(self.cache_dir, LOCK_FILE), WAIT_LIMIT)
        HOLDERS.add(self)
        group = super().get_group(filename)
        if group is not None:
            self._release()
        return group

    def put_group(self, filename, group):
        try:
            return super().put_group(filename, group)
        finally:
            self._release()

    def _release(self):
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        HOLDERS.discard(self)

    def __del__(self):
        self._release()


def release_held() -> None:
    """Release every entry lock this process holds (a compile that raised keeps its own)."""
    for manager in list(HOLDERS):
        manager._release()


def acquire(path: str, limit: float):
    """The open lock file at `path`, exclusively locked, once free or after `limit` seconds
    (then unlocked: the caller goes on without it)."""
    handle = open(path, "a")
    deadline = time.monotonic() + limit
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return handle
            time.sleep(POLL)

