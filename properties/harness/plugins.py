"""Backends from outside this repo, and mutants, plugged into the registry.

- `pytest --sc-backend KERNEL=package.module:callable` (repeatable);
- installed packages: entry points in the group `samplecheck.backends`, each named
  `KERNEL.BACKEND` with the value `package.module:callable`;
- the vLLM pack (samplecheck.backends.vllm), plugged like an installed entry point whenever
  the `vllm` package is installed or SAMPLECHECK_VLLM_KERNELS names vLLM's vendored kernels;
- `pytest --sc-backend-only`: test the plugged implementations alone;
- `pytest --sc-mutant NAME`: test one mutant of samplecheck.kernels.mutants alone.

A plugged callable may declare what it supports with a `samplecheck` attribute, a dict
with any of `devices` ("cpu", "cuda"), `dtypes` (torch dtypes), `layouts` (names from
samplecheck.inputs.layouts.LAYOUTS), `extra_memory` (a callable (logits, args) -> bytes the call
may allocate beyond its inputs; undeclared: the record's bound, our kernel's), `accepts` (a
callable case -> bool: the drawn cases it implements), `semantics` ({axis: value} along
the axes of samplecheck.judging.semantics; undeclared: the strict defaults),
`fixed_vocabs` (True: it compiles per vocabulary size, so only the fixed sizes are drawn; or a
tuple of the sizes to draw) and
`capturable` (True: a call captures in a CUDA graph and replays bitwise, checked by
test_graph_replay on CUDA); undeclared
devices, dtypes and layouts mean everything. Combos outside the declaration are skipped with
the reason shown. docs/backends.md documents each kernel's contract.
"""

import dataclasses
from importlib.metadata import entry_points

from samplecheck.harness.packs import installed_packs
from samplecheck.harness.registry import REGISTRY, Backend, Mark
from samplecheck.kernels.mutants import GENERATED_ENV, MUTANTS

ENTRY_POINT_GROUP = "samplecheck.backends"
# Entry points that name no registered kernel, with the reason: reported, not tested.
UNPLUGGED: list[str] = []


def backend_from_target(name: str, target: str) -> Backend:
    """A Backend for "package.module:callable", with the callable's declared support."""
    if ":" not in target:
        raise ValueError(f"backend target must be 'package.module:callable', got {target!r}")
    backend = Backend(name, target)
    declared = getattr(backend.resolve(), "samplecheck", {})
    unknown = set(declared) - {"devices", "dtypes", "layouts", "extra_memory", "accepts", "semantics",
                              "fixed_vocabs", "capturable"}
    if unknown:
        raise ValueError(f"{target}: unknown keys in its samplecheck declaration: {sorted(unknown)}")
    return Backend(name, target, devices=tuple(declared.get("devices", ("cpu", "cuda"))),
                   dtypes=declared.get("dtypes"), layouts=declared.get("layouts"),
                   extra_memory=declared.get("extra_memory"), accepts=declared.get("accepts"),
                   semantics=dict(declared.get("semantics", {})), fixed_vocabs=_fixed_vocabs(declared.get("fixed_vocabs", False)),
                   capturable=bool(declared.get("capturable")), error_messages=False)


def parse_backend_option(text: str) -> tuple[str, Backend]:
    """`KERNEL=package.module:callable` -> (kernel, Backend named after the callable)."""
    kernel, sep, target = text.partition("=")
    if not sep or not kernel or not target:
        raise ValueError(f"--sc-backend takes KERNEL=package.module:callable, got {text!r}")
    return kernel, backend_from_target(target.rpartition(":")[2], target)


def installed_backends() -> list[tuple[str, Backend]]:
    """Backends declared by installed packages' `samplecheck.backends` entry points. An entry
    point that cannot be loaded (its module fails to import, its target or declaration is
    wrong, its name is malformed) does not stop the run: it becomes a backend whose every
    test is skipped with the package, the target and the error as the reason."""
    plugged = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        kernel, sep, name = ep.name.partition(".")
        try:
            if not sep or kernel not in REGISTRY:
                raise ValueError(f"entry point names must be KERNEL.BACKEND with KERNEL one of "
                                 f"{', '.join(REGISTRY)}; got {ep.name!r}")
            plugged.append((kernel, backend_from_target(name, ep.value)))
        except Exception as err:  # noqa: BLE001 (any import-time error of third-party code)
            package = ep.dist.name if ep.dist is not None else "an unknown package"
            reason = (f"broken entry point {ep.name!r} = {ep.value!r} of package {package} "
                      f"(group {ENTRY_POINT_GROUP}): {type(err).__name__}: {err}")
            if kernel in REGISTRY:
                plugged.append((kernel, Backend(name, ep.value, marks=(Mark("skip", reason),), error_messages=False)))
            else:
                UNPLUGGED.append(reason)
    return plugged + installed_packs(UNPLUGGED)


def mutant_backend(name: str) -> tuple[str, Backend]:
    """The mutant as a backend of its kernel, with the declared skips and `accepts` of the
    backend it patches (so it runs exactly where the original would)."""
    if name not in MUTANTS:
        raise ValueError(f"--sc-mutant must be one of {', '.join(MUTANTS)} (generated mutants: name their JSON file "
                         f"in ${GENERATED_ENV}); got {name!r}")
    mutant = MUTANTS[name]
    original = next(b for b in REGISTRY[mutant.kernel].backends if b.target == f"{mutant.module}:{mutant.entry}")
    return mutant.kernel, dataclasses.replace(original, name=f"mutant-{name}", target=f"samplecheck.kernels.mutants:{name}")


def _fixed_vocabs(value) -> bool | tuple[int, ...]:
    """A plug-in's `fixed_vocabs` declaration: a bool, or a tuple of positive vocab sizes."""
    if isinstance(value, bool):
        return value
    sizes = tuple(value)
    if not sizes or not all(isinstance(v, int) and v >= 1 for v in sizes):
        raise ValueError(f"fixed_vocabs must be True, False or a non-empty tuple of vocab sizes >= 1, got {value!r}")
    return sizes
