"""GPU memory shared by the workers of a run (samplecheck.harness.big_buffers): a worker gives
its cache back past its share of the GPU, while another worker holds big buffers, and before
it queues for them, its unreachable reference cycles collected first, and a holder gives both
back when its block ends; a holder of big buffers waits for the free memory its declared need asks
for first, and one that waited in vain warns, naming the GPU's processes; a GPU smaller in all
than a holder's declared need skips the test. torch.cuda is stood in for, so this runs without
a GPU."""

import fcntl
import gc
import os
import types
import weakref

import pytest
import torch

from samplecheck.harness import big_buffers
from samplecheck.harness.mps import SHARING_PROCESSES
from samplecheck.tools import gate

GIB = 2**30
GPU = torch.device("cuda", 0)


class StandInGpu:
    """torch.cuda's memory calls for one GPU of `total` bytes; `free`, `reserved` and
    `allocated` are set by the test, and `emptied` counts empty_cache calls (each frees the
    reserved bytes)."""

    def __init__(self, total: int):
        self.total, self.free, self.reserved, self.allocated, self.emptied = total, total, 0, 0, 0

    def empty_cache(self):
        self.emptied += 1
        self.free += self.reserved
        self.reserved = 0


@pytest.fixture
def gpu(tmp_path, monkeypatch):
    stand_in = StandInGpu(80 * GIB)
    monkeypatch.setattr(big_buffers, "gpu_lock", lambda device: tmp_path / "gpu.lock")
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda index: types.SimpleNamespace(total_memory=stand_in.total))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: stand_in.reserved)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: stand_in.allocated)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (stand_in.free, stand_in.total))
    monkeypatch.setattr(torch.cuda, "empty_cache", stand_in.empty_cache)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "16")
    monkeypatch.delenv(SHARING_PROCESSES, raising=False)
    big_buffers.cache_share.cache_clear()
    yield stand_in
    big_buffers.cache_share.cache_clear()


@pytest.mark.cpu_subject
def test_a_worker_caches_its_share_of_the_gpu(gpu):
    assert big_buffers.cache_share(GPU) == int(big_buffers.CACHES_SHARE * 80 * GIB) // 16
    gpu.reserved = big_buffers.cache_share(GPU)
    big_buffers.release_cache(GPU, 0)
    assert gpu.emptied == 0
    gpu.reserved += 1
    big_buffers.release_cache(GPU, 0)
    assert gpu.emptied == 1 and gpu.reserved == 0


@pytest.mark.cpu_subject
def test_the_share_counts_every_process_samplecheck_runs_on_the_gpus(gpu, monkeypatch):
    monkeypatch.setenv(SHARING_PROCESSES, "24")  # a gate: 16 suite workers and 8 mutant hunts
    assert big_buffers.cache_share(GPU) == int(big_buffers.CACHES_SHARE * 80 * GIB) // 24


@pytest.mark.cpu_subject
def test_the_gate_names_its_processes_for_its_block_alone(monkeypatch):
    monkeypatch.delenv(SHARING_PROCESSES, raising=False)
    with gate.sharing_gpus(24):
        assert os.environ[SHARING_PROCESSES] == "24"
    assert SHARING_PROCESSES not in os.environ
    monkeypatch.setenv(SHARING_PROCESSES, "40")  # the caller's count stays
    with gate.sharing_gpus(24):
        assert os.environ[SHARING_PROCESSES] == "40"
    assert os.environ[SHARING_PROCESSES] == "40"


@pytest.mark.cpu_subject
def test_every_worker_gives_its_cache_back_while_another_holds_big_buffers(gpu, tmp_path):
    gpu.reserved = GIB
    with (tmp_path / "gpu.lock").open("w") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)  # another worker, in big_buffers
        big_buffers.release_cache(GPU, 0)
        assert gpu.emptied == 1
    gpu.reserved = GIB
    big_buffers.release_cache(GPU, 0)  # the lock is free again
    assert gpu.emptied == 1 and gpu.reserved == GIB


@pytest.mark.cpu_subject
def test_a_worker_gives_its_cache_back_before_it_queues_for_big_buffers(gpu, monkeypatch):
    """A worker queued for the lock holds no cache that the holder's wait for free memory
    would count against it (a suite whose workers queue behind one holder with their caches
    kept waits out BIG_WAIT_S)."""
    gpu.reserved, queued_with = GIB, []
    flock = fcntl.flock

    def recording_flock(file, operation):
        if operation == fcntl.LOCK_EX:
            queued_with.append(gpu.reserved)
        flock(file, operation)

    monkeypatch.setattr(big_buffers.fcntl, "flock", recording_flock)
    with big_buffers.big_buffers(GPU):
        pass
    assert queued_with == [0]


@pytest.mark.cpu_subject
def test_a_holder_of_big_buffers_waits_for_free_memory(gpu, monkeypatch):
    gpu.free, waits = 10 * GIB, []

    def sleep(seconds):  # the other workers' caches come back while it waits
        waits.append(seconds)
        gpu.free += 10 * GIB

    monkeypatch.setattr(big_buffers.time, "sleep", sleep)
    with big_buffers.big_buffers(GPU):
        assert gpu.free >= big_buffers.BIG_FREE_SHARE * gpu.total
    assert len(waits) == 3


@pytest.fixture
def memory_never_free(gpu, monkeypatch):
    """No free memory on the stand-in GPU, and a clock that each wait's sleep moves on; the clock
    (seconds, in a list)."""
    gpu.free, clock = 0, [0.0]
    monkeypatch.setattr(big_buffers.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(big_buffers.time, "sleep", lambda seconds: clock.__setitem__(0, clock[0] + seconds))
    return clock


@pytest.mark.cpu_subject
def test_a_holder_goes_on_after_its_longest_wait(memory_never_free, monkeypatch):
    clock = memory_never_free
    monkeypatch.setattr(torch.cuda, "list_gpu_processes", lambda device=None: "process 4242 uses 48790.0 MB GPU memory")
    with pytest.warns(RuntimeWarning, match=r"0\.0 of 80\.0 GiB free on cuda:0 after 120 s, 40\.0 GiB wanted: "
                                            r"going on\nprocess 4242 uses 48790\.0 MB"):
        with big_buffers.big_buffers(GPU):
            assert clock[0] >= big_buffers.BIG_WAIT_S


@pytest.mark.cpu_subject
def test_a_failing_process_listing_does_not_fail_the_holder(memory_never_free, monkeypatch):
    def no_nvml(device=None):
        raise RuntimeError("NVML unavailable")

    monkeypatch.setattr(torch.cuda, "list_gpu_processes", no_nvml)
    with pytest.warns(RuntimeWarning, match=r"the GPU's processes not listed: RuntimeError\('NVML unavailable'\)"):
        with big_buffers.big_buffers(GPU):
            ran = True
    assert ran


@pytest.mark.cpu_subject
def test_a_holder_waits_only_for_its_declared_peak_and_a_margin(gpu, monkeypatch):
    """A small declared peak does not hold the lock (and every queued worker) waiting for half
    the GPU; an undeclared or large one waits for BIG_FREE_SHARE."""
    margin = int(big_buffers.BIG_MARGIN_SHARE * gpu.total)
    waits = []

    def sleep(seconds):  # every other cache comes back while it waits
        waits.append(seconds)
        gpu.free = gpu.total

    monkeypatch.setattr(big_buffers.time, "sleep", sleep)
    gpu.free = GIB + margin
    with big_buffers.big_buffers(GPU, GIB, "a small far list"):
        assert waits == []
    gpu.free = GIB + margin - 1
    with big_buffers.big_buffers(GPU, GIB, "a small far list"):
        assert len(waits) == 1
    for need in (0, 60 * GIB):
        gpu.free, waits[:] = int(big_buffers.BIG_FREE_SHARE * gpu.total) - 1, []
        with big_buffers.big_buffers(GPU, need):
            assert len(waits) == 1


@pytest.mark.cpu_subject
def test_a_gpu_too_small_for_the_buffers_skips_naming_both_sizes(gpu):
    gpu.total = gpu.free = 48 * GIB
    with pytest.raises(pytest.skip.Exception, match=r"a far list needs 50\.0 GiB of GPU memory; "
                                                    r"this GPU has 48\.0 GiB in all"):
        with big_buffers.big_buffers(GPU, 50 * GIB, "a far list"):
            raise AssertionError("the block ran")
    assert gpu.emptied == 0  # skipped before it took the lock and gave its cache back
    with big_buffers.big_buffers(GPU, 48 * GIB, "a far list"):
        ran = True
    assert ran and gpu.emptied > 0


class InACycle:
    """An object only a reference cycle keeps: allocated until the cyclic collector runs."""

    def __init__(self):
        self.itself = self


@pytest.fixture
def garbage_at_each_give_back(gpu, monkeypatch):
    """With the cyclic collector off, an unreachable cycle made now and after each empty_cache;
    for each empty_cache, whether the cycle made before it was collected by then."""
    collected, previous = [], [weakref.ref(InACycle())]

    def empty_cache():
        collected.append(previous.pop()() is None)
        previous.append(weakref.ref(InACycle()))
        StandInGpu.empty_cache(gpu)

    monkeypatch.setattr(torch.cuda, "empty_cache", empty_cache)
    was_enabled = gc.isenabled()
    gc.disable()
    yield collected
    if was_enabled:
        gc.enable()


@pytest.mark.cpu_subject
def test_memory_goes_back_with_the_garbage_of_the_worker(gpu, garbage_at_each_give_back, tmp_path):
    """A tensor in a reference cycle (the frames of a caught error's traceback) is memory that
    emptying the cache cannot give back: a holder waiting for it would wait out BIG_WAIT_S.
    After a test, the collection (about 0.25 s in a suite worker) runs only where the test left
    more memory allocated than it found."""
    collected = garbage_at_each_give_back
    with big_buffers.big_buffers(GPU):  # gives back before it queues, and when the block ends
        pass
    with (tmp_path / "gpu.lock").open("w") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)  # another worker, in big_buffers
        gpu.allocated = GIB  # the test left a GiB allocated: its garbage, maybe
        big_buffers.release_cache(GPU, 0)
        big_buffers.release_cache(GPU, GIB)  # nothing left by the test: no collection (0.25 s)
    assert collected == [True, True, True, False]
