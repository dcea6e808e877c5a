"""Packs: a third-party engine's kernels, adapted and declared, plugged in by entry point.

A pack is an entry point in the group `samplecheck.packs`, named after the engine, whose value
is "package.module:callable". The callable takes no argument and returns the pack's
(kernel, Backend) pairs: each backend a `samplecheck.registry.records.Backend` whose target
calls the engine exactly as the engine's own call site does, with the conventions it
legitimately differs in declared as data (`semantics`, `accepts`) and its defects pinned
(`marks`). When the engine is not there (not installed, no GPU it needs), the callable raises
`PackUnavailable` (samplecheck.registry.records) with the reason: the pack is then reported,
not tested. The harness names no engine: samplecheck's own packs (vLLM, FlashInfer, Hugging
Face transformers) are declared in its pyproject.toml like any other package's.

The callable is called once per pytest process, after the device is chosen (so a pack's
Triton kernels see TRITON_INTERPRET=1 on a CPU run), and must not import the engine's kernels
before a backend is first called.

A pack module may also keep its pairs, built without the engine, as a module-level `PACK`
(the vLLM and FlashInfer packs do): then its declarations are checked where the engine is absent
(tests/cover/test_packs.py: the backends that records' regression examples name exist).
"""

from importlib.metadata import entry_points

from samplecheck.registry.records import PackUnavailable

PACK_GROUP = "samplecheck.packs"


def selected(option: str) -> set[str] | None:
    """The packs `--sc-packs` names: None for "all" (every installed pack), else the set of
    names ("none": the empty set)."""
    if option == "all":
        return None
    return set() if option == "none" else {name.strip() for name in option.split(",") if name.strip()}


def installed_packs(unplugged: list[str], wanted: set[str] | None = None) -> tuple[list, list[str]]:
    """The (kernel, Backend) pairs of every installed pack (of those in `wanted`, when given),
    and the reasons of the packs that failed. A pack whose engine is absent, or that `wanted`
    leaves out, adds its reason to `unplugged` and nothing else; a pack that fails otherwise
    (its module does not import, its callable raises) gives a reason naming the pack, its
    package and the error, and the other packs still load. A wanted pack that is not
    installed raises ValueError."""
    installed = entry_points(group=PACK_GROUP)
    missing = (wanted or set()) - {ep.name for ep in installed}
    if missing:
        raise ValueError(f"--sc-packs names packs that are not installed: {', '.join(sorted(missing))}; "
                         f"installed: {', '.join(sorted(ep.name for ep in installed)) or 'none'}")
    plugged, broken = [], []
    for ep in installed:
        if wanted is not None and ep.name not in wanted:
            unplugged.append(f"pack {ep.name!r}: not selected (--sc-packs)")
            continue
        try:
            plugged += list(ep.load()())
        except PackUnavailable as reason:
            unplugged.append(f"pack {ep.name!r}: {reason}")
        except Exception as err:  # noqa: BLE001 (any import-time error of third-party code)
            package = ep.dist.name if ep.dist is not None else "an unknown package"
            broken.append(f"broken pack {ep.name!r} = {ep.value!r} of package {package} "
                          f"(group {PACK_GROUP}): {type(err).__name__}: {err}")
    return plugged, broken
