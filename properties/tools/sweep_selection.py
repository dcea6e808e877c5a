"""The sweep's selection: a pytest plugin that `samplecheck sweep` loads with `-p` (so that
pytest-xdist's workers, which collect, load it too).

Of samplecheck's tests it keeps those that judge backends (`judges_backends`: the selection
`--sc-backend-only` applies) and, of those, the ones whose backends run on the run's device,
in a dtype and layout the backend declares; the rest are deselected, not run (the sweep's
report names the backends and cells left out). Tests marked `gpu` stay collected: the suite's
plugin skips them on CPU, and the report names them. Loaded before the suite's plugin chooses
the device, this module imports the registry (and so torch) only when its hooks run.
"""

from samplecheck.harness.options import owns


def runs_here(item, device: str) -> bool:
    """Whether `item` judges backends, every backend it names runs on `device`, and its cell
    (a `Combo`'s dtype and layout) is one its backend declares."""
    from samplecheck.harness.selection import judges_backends
    from samplecheck.registry.matrix import Combo
    from samplecheck.registry.records import Backend

    if not judges_backends(item):
        return False
    for value in getattr(getattr(item, "callspec", None), "params", {}).values():
        if isinstance(value, Combo) and not declares(value.backend, device, value.dtype, value.layout):
            return False
        if isinstance(value, tuple) and any(isinstance(v, Backend) and device not in v.devices for v in value):
            return False
    return True


def declares(backend, device: str, dtype, layout: str) -> bool:
    """Whether `backend` runs on `device` and declares `dtype` and `layout` (undeclared: all)."""
    return (device in backend.devices and (backend.dtypes is None or dtype in backend.dtypes)
            and (backend.layouts is None or layout in backend.layouts))


def pytest_collection_modifyitems(config, items):
    device = config.samplecheck_device.type  # set by the suite's plugin, cpu or cuda
    left_out = [item for item in items if owns(item.path) and not runs_here(item, device)]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        dropped = set(left_out)
        items[:] = [item for item in items if item not in dropped]

