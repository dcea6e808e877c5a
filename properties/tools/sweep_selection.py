"""The sweep's selection: a pytest plugin that `samplecheck sweep` loads with `-p` (so that
pytest-xdist's workers, which collect, load it too).

Of samplecheck's tests it keeps those that judge backends (`judges_backends`: the selection
`--sc-backend-only` applies) and, of those, the ones whose backends run on the run's device;
the rest are deselected, not run. `elsewhere` names the cells left out for their device, for
the sweep's report. Tests marked `gpu` stay collected: the suite's plugin skips them on CPU,
and the report names them. Loaded before the suite's plugin chooses the device, this module
imports the registry (and so torch) only when its hooks run.
"""

from samplecheck.harness.options import owns


def backends_of(item) -> list:
    """The backends the registry parametrized `item` with (a `Combo`'s, or one inside a tuple
    parameter: an error case, a bad-input entry)."""
    from samplecheck.harness.registry import Backend, Combo

    found = []
    for value in getattr(getattr(item, "callspec", None), "params", {}).values():
        if isinstance(value, Combo):
            found.append(value.backend)
        elif isinstance(value, tuple):
            found += [v for v in value if isinstance(v, Backend)]
    return found


def runs_here(item, device: str) -> bool:
    """Whether `item` judges backends and every backend it names runs on `device`."""
    from samplecheck.harness.selection import judges_backends

    return judges_backends(item) and all(device in backend.devices for backend in backends_of(item))


def pytest_collection_modifyitems(config, items):
    device = config.samplecheck_device.type  # set by the suite's plugin, cpu or cuda
    left_out = [item for item in items if owns(item.path) and not runs_here(item, device)]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        dropped = set(left_out)
        items[:] = [item for item in items if item not in dropped]


def elsewhere(device: str) -> list[str]:
    """`kernel/backend (devices)` of each registered backend that never runs on `device`."""
    from samplecheck.harness.registry import REGISTRY

    return [f"{info.name}/{backend.name} ({','.join(backend.devices)})"
            for info in REGISTRY.values() for backend in info.backends if device not in backend.devices]
