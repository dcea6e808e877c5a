"""The order the suite's tests run in: longest expected first, dealt to the xdist workers.

pytest-xdist's `worksteal` scheduler hands each worker one contiguous share of the collection
and lets an idle worker take the back half of the longest queue. In collection order a
worker's share can hold a whole file of the heaviest cells, and a heavy test taken last
decides the run's end. So the suite's tests are sorted by their expected seconds, longest
first, and dealt into as many shares as there are workers (each share the size worksteal gives it,
each test to the share with the least expected seconds so far): every worker starts with a
share of about equal cost, heaviest first, and what is stolen or run last is light.

Expected seconds come from `durations.json` beside this module: per device type, the mean
duration of each (test function, record, backend) measured by a run of the gate profile
(made with `python -m samplecheck.tools.durations RESULTS.json --device D`, RESULTS the
`--sc-results` file of that run). A test the table does not know costs its function's mean,
else the table's median. `--sc-order=collection` keeps pytest's order.
"""

import functools
import heapq
import json
import statistics
from pathlib import Path

TABLE = Path(__file__).with_name("durations.json")


def cost_key(item) -> str:
    """The table's key of a test: its function, and the record and backend of its `combo` or
    `error_case` parameter, the cell the results file records it under (results.CaseRecorder)."""
    from samplecheck.registry.matrix import Combo

    params = getattr(getattr(item, "callspec", None), "params", {})
    combo, error_case = params.get("combo"), params.get("error_case")
    if isinstance(combo, Combo):
        return key(item.originalname, combo.info.name, combo.backend.name)
    if isinstance(error_case, tuple):
        return key(item.originalname, error_case[0].name, error_case[1].name)
    return key(item.originalname, "", "")


def key(function: str, record: str, backend: str) -> str:
    return f"{function} {record} {backend}".rstrip()


@functools.cache
def table(device_type: str) -> dict[str, float]:
    """{key: expected seconds} for tests on `device_type` ({} when none was measured)."""
    if not TABLE.is_file():
        return {}
    return json.loads(TABLE.read_text()).get(device_type, {})


def expected_seconds(keys: list[str], known: dict[str, float]) -> list[float]:
    """Each key's expected seconds: its own entry, its function's mean, or the median."""
    by_function: dict[str, list[float]] = {}
    for name, seconds in known.items():
        by_function.setdefault(name.split(" ", 1)[0], []).append(seconds)
    means = {function: statistics.fmean(values) for function, values in by_function.items()}
    median = statistics.median(known.values())
    return [known.get(k, means.get(k.split(" ", 1)[0], median)) for k in keys]


def share_sizes(count: int, workers: int) -> list[int]:
    """The sizes of worksteal's first shares of `count` tests among `workers` idle workers."""
    sizes, left = [], count
    for remaining in range(workers, 0, -1):
        sizes.append(left // remaining)
        left -= sizes[-1]
    return sizes


def dealt(costs: list[float], workers: int) -> list[int]:
    """Indices of the tests in run order: longest first (ties in collection order), each given
    to the share with the least expected seconds that still has room (shares of worksteal's
    sizes, one per worker), the shares concatenated; each share stays longest first."""
    order = sorted(range(len(costs)), key=lambda i: (-costs[i], i))
    if workers <= 1:
        return order
    sizes = share_sizes(len(order), workers)
    shares: list[list[int]] = [[] for _ in sizes]
    loads = [(0.0, share) for share in range(workers)]
    for index in order:
        load, share = heapq.heappop(loads)
        shares[share].append(index)
        if len(shares[share]) < sizes[share]:
            heapq.heappush(loads, (load + costs[index], share))
    return [index for share in shares for index in share]


def reorder(config, items: list, ours: list) -> None:
    """Put the suite's tests (`ours`, a sublist of `items`) in cost order, in the places they
    hold in `items`; every other test keeps its place."""
    if config.getoption("--sc-order") == "collection" or len(ours) < 2:
        return
    known = table(config.samplecheck_device.type)
    if not known:
        return
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    ordered = [ours[i] for i in dealt(expected_seconds([cost_key(item) for item in ours], known), workers)]
    mine = {id(item) for item in ours}
    slots = iter(ordered)
    items[:] = [next(slots) if id(item) in mine else item for item in items]
