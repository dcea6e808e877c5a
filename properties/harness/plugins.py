"""Backends from outside this repo, and mutants, plugged into the registry (`register_all`
registers the records they join: every module of samplecheck.infos).

- `pytest --sc-backend KERNEL=package.module:callable` (repeatable);
- installed packages: entry points in the group `samplecheck.backends`, each named
  `KERNEL.BACKEND` with the value `package.module:callable`; one that fails to load fails
  the run before any test runs, unless `--sc-allow-broken-plugins` (then it is reported and
  its tests skipped);
- packs (samplecheck.harness.packs), e.g. the vLLM pack, plugged like installed entry points
  when their engine is there (reported when it is not); a pack that fails otherwise fails the
  run like a broken entry point;
- `pytest --sc-backend-only`: test the plugged implementations alone;
- `pytest --sc-mutant NAME[,NAME...]`: test mutants of samplecheck.mutants alone.

A plugged callable may declare what it supports with a `samplecheck` attribute, a dict with
any of the keys of `DECLARATION_KEYS` (each explained there); undeclared devices, dtypes and
layouts mean everything. Combos outside the declaration are skipped with the reason shown.
docs/backends.md documents each kernel's contract; a callable whose signature cannot take the
calls of its kernel (`contract`) is reported before any test runs.
"""

import dataclasses
import functools
import inspect
from importlib.metadata import entry_points

from samplecheck.harness.packs import installed_packs
from samplecheck.mutants import GENERATED_ENV, MUTANTS
from samplecheck.registry.matrix import RECORDS, REGISTRY
from samplecheck.registry.records import Backend, Mark

ENTRY_POINT_GROUP = "samplecheck.backends"
# The keys of a plug-in's `samplecheck` declaration, each the Backend field of that name.
DECLARATION_KEYS = (
    "devices",  # "cpu" and/or "cuda" (undeclared: both)
    "dtypes",  # the torch dtypes it takes (undeclared: the record's)
    "layouts",  # names from samplecheck.registry.layouts.LAYOUTS (undeclared: the record's)
    "extra_memory",  # a callable (logits, args) -> bytes a call may allocate beyond its inputs
    #                  (undeclared: the record's bound, our kernel's)
    "accepts",  # a callable case -> bool: the drawn cases it implements (undeclared: all)
    "semantics",  # {axis: value} along the axes of samplecheck.registry.semantics (undeclared: the strict defaults)
    "fixed_vocabs",  # True: it compiles per vocabulary size, so only the fixed sizes are drawn; or the sizes to draw
    "capturable",  # True: a call captures in a CUDA graph and replays bitwise (test_graph_replay, CUDA)
    "batch_invariant",  # True: each row's outputs do not depend on its batch (test_batch_invariance fails a
    #                     difference); False: not claimed, skipped; undeclared: measured and reported, never failed
)
# Plug-ins that are not tested, with the reason (for the pytest header): packs whose engine is
# absent and, under allow_broken, entry points and packs that failed to load.
UNPLUGGED: list[str] = []


class BrokenPlugins(ImportError):
    """Installed plug-ins (entry points of `samplecheck.backends`, packs) failed to load; the
    message names each, its package and its error."""

    def __init__(self, reasons: list[str]):
        super().__init__("samplecheck: installed plug-ins failed to load, so no test ran (fix them, or pass "
                         "--sc-allow-broken-plugins, `samplecheck test --allow-broken-plugins`, to report them "
                         "and skip their tests):\n" + "\n".join(f"  {reason}" for reason in reasons))
        self.reasons = reasons


def register_all() -> None:
    """Register every record (importing samplecheck.infos registers each of its modules)."""
    import samplecheck.infos  # noqa: F401


def backend_from_target(kernel: str, name: str, target: str) -> Backend:
    """A Backend of `kernel` for "package.module:callable", with the callable's declared support,
    once the callable is known to take the calls samplecheck makes to that kernel's backends."""
    if ":" not in target:
        raise ValueError(f"backend target must be 'package.module:callable', got {target!r}")
    if kernel not in RECORDS:
        raise ValueError(f"unknown kernel {kernel!r} for {target}; registered: {', '.join(RECORDS)}")
    backend = Backend(name, target)
    function = backend.resolve()
    check_call(kernel, target, function)
    declared = getattr(function, "samplecheck", {})
    unknown = set(declared) - set(DECLARATION_KEYS)
    if unknown:
        raise ValueError(f"{target}: unknown keys in its samplecheck declaration: {sorted(unknown)}")
    return Backend(name, target, devices=tuple(declared.get("devices", ("cpu", "cuda"))),
                   dtypes=declared.get("dtypes"), layouts=declared.get("layouts"),
                   extra_memory=declared.get("extra_memory"), accepts=declared.get("accepts"),
                   semantics=dict(declared.get("semantics", {})), fixed_vocabs=_fixed_vocabs(declared.get("fixed_vocabs", False)),
                   capturable=bool(declared.get("capturable")), batch_invariant=_batch_invariant(declared),
                   error_messages=False)


@functools.cache
def contract(kernel: str) -> inspect.Signature:
    """How samplecheck calls a backend of `kernel`: the signature of the record's own
    implementation (its first backend, ours) without its launch knobs and annotations. The
    runner (samplecheck.harness.runner.run) passes the logits positionally and the record's
    `make_args` keywords, error inputs some of them: every parameter after the logits may be
    passed by keyword, and those with a default may be left out."""
    own = RECORDS[kernel].backends[0]
    parameters = [p.replace(annotation=inspect.Parameter.empty)
                  for p in inspect.signature(own.resolve()).parameters.values() if p.name not in own.knobs]
    return inspect.Signature(parameters)


def check_call(kernel: str, target: str, function) -> None:
    """Raise TypeError, naming `target`, `kernel` and the expected parameters, when `function`
    cannot be called as samplecheck calls `kernel`'s backends: the logits, then every
    parameter of the `contract` by keyword, or its required parameters alone. A callable whose
    signature Python cannot read is taken as it is."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return
    logits, *rest = contract(kernel).parameters.values()
    every = [p.name for p in rest]
    required = [p.name for p in rest if p.default is inspect.Parameter.empty]
    for names in (every, required):
        try:
            signature.bind(None, **dict.fromkeys(names))
        except TypeError as err:
            call = ", ".join([logits.name] + [f"{name}=..." for name in names])
            raise TypeError(f"{target} cannot take samplecheck's calls of a {kernel} backend: called as "
                            f"{target.rpartition(':')[2]}({call}) it raises TypeError: {err}. Expected "
                            f"parameters: {kernel}{contract(kernel)} (docs/backends.md)") from None


def parse_backend_option(text: str) -> tuple[str, Backend]:
    """`KERNEL=package.module:callable` -> (kernel, Backend named after the callable)."""
    kernel, sep, target = text.partition("=")
    if not sep or not kernel or not target:
        raise ValueError(f"--sc-backend takes KERNEL=package.module:callable, got {text!r}")
    return kernel, backend_from_target(kernel, target.rpartition(":")[2], target)


def installed_backends(*, allow_broken: bool = False, packs: set[str] | None = None) -> list[tuple[str, Backend]]:
    """Backends declared by installed packages: `samplecheck.backends` entry points and packs.
    An entry point that cannot be loaded (its module fails to import, its target, declaration
    or signature is wrong, its name is malformed) or a pack that fails raises BrokenPlugins,
    naming every one with its package and error, so that no run passes without testing it.
    With `allow_broken`, each is reported instead: a broken entry point of a known kernel
    becomes a backend whose every test is skipped with the reason, any other broken plug-in a
    line of UNPLUGGED. `packs`: the packs to load (None: every installed one)."""
    plugged, broken, unplugged = [], [], []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        kernel, sep, name = ep.name.partition(".")
        try:
            if not sep or kernel not in RECORDS:
                raise ValueError(f"entry point names must be KERNEL.BACKEND with KERNEL one of "
                                 f"{', '.join(RECORDS)}; got {ep.name!r}")
            plugged.append((kernel, backend_from_target(kernel, name, ep.value)))
        except Exception as err:  # noqa: BLE001 (any import-time error of third-party code)
            package = ep.dist.name if ep.dist is not None else "an unknown package"
            reason = (f"broken entry point {ep.name!r} = {ep.value!r} of package {package} "
                      f"(group {ENTRY_POINT_GROUP}): {type(err).__name__}: {err}")
            broken.append(reason)
            if kernel in RECORDS:
                plugged.append((kernel, Backend(name, ep.value, marks=(Mark("skip", reason),), error_messages=False)))
            else:
                unplugged.append(reason)
    pack_pairs, broken_packs = installed_packs(UNPLUGGED, packs)
    plugged += pack_pairs
    broken += broken_packs
    unplugged += broken_packs
    if broken and not allow_broken:
        raise BrokenPlugins(broken)
    UNPLUGGED.extend(unplugged)
    return plugged


def requested_backends(options: list[str], *, allow_broken: bool, packs: set[str] | None) -> list[tuple[str, Backend]]:
    """The backends a run plugs: those named by `--sc-backend` options (KERNEL=module:callable),
    then the installed entry points and packs (`installed_backends`)."""
    return [parse_backend_option(text) for text in options] + installed_backends(allow_broken=allow_broken,
                                                                                 packs=packs)


def mutant_names(text: str) -> list[str]:
    """`--sc-mutant`'s value: mutant names separated by commas."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError(f"--sc-mutant takes NAME[,NAME...], got {text!r}")
    return names


def mutant_backend(name: str) -> tuple[str, Backend]:
    """The mutant as a backend of its kernel, with the declared skips and `accepts` of the
    backend it patches (so it runs exactly where the original would)."""
    if name not in MUTANTS:
        raise ValueError(f"--sc-mutant must be one of {', '.join(MUTANTS)} (generated mutants: name their JSON file "
                         f"in ${GENERATED_ENV}); got {name!r}")
    mutant = MUTANTS[name]
    original = next(b for b in REGISTRY[mutant.kernel].backends if b.target == f"{mutant.entry_module}:{mutant.entry}")
    return mutant.kernel, dataclasses.replace(original, name=f"mutant-{name}", target=f"samplecheck.mutants:{name}")


def _batch_invariant(declared: dict) -> bool | None:
    """A plug-in's `batch_invariant` declaration: True, False, or absent (None: measured)."""
    value = declared.get("batch_invariant")
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"batch_invariant must be True or False, got {value!r}")
    return value


def _fixed_vocabs(value) -> bool | tuple[int, ...]:
    """A plug-in's `fixed_vocabs` declaration: a bool, or a tuple of positive vocab sizes."""
    if isinstance(value, bool):
        return value
    sizes = tuple(value)
    if not sizes or not all(isinstance(v, int) and v >= 1 for v in sizes):
        raise ValueError(f"fixed_vocabs must be True, False or a non-empty tuple of vocab sizes >= 1, got {value!r}")
    return sizes
