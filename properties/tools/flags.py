"""The flags the `samplecheck` commands share, and the pytest options they become.

A command adds the flags that make sense for it with `add_suite_flags` (or `add_device` alone)
and reads them back with `suite_flags`; `SuiteFlags.pytest_options()` spells them as
samplecheck's pytest options, all prefixed `--sc-` so that no host project's own pytest
option clashes with them:

    --device auto|cpu|cuda      -> --sc-device (resolved: auto becomes cpu or cuda)
    --profile dev|ci|gate|nightly -> --sc-profile (default: gate on CUDA, ci on CPU)
    --backend KERNEL=MOD:FN     -> --sc-backend (repeatable)
    --backend-only              -> --sc-backend-only
    --allow-broken-plugins      -> --sc-allow-broken-plugins
    --packs all|none|NAME,...   -> --sc-packs (default all: every installed pack)
    --mutant NAME               -> --sc-mutant
    (gate --changed REF)        -> --sc-cells (the cells the change touches), --sc-tests (the
                                   test modules it changes that judge no registry cell)
    --stat-alpha A              -> --sc-stat-alpha
"""

import argparse
import re
from dataclasses import dataclass

DEVICES = ("auto", "cpu", "cuda")
PROFILES = ("dev", "ci", "gate", "nightly")
BACKEND = re.compile(r"[A-Za-z_]\w*=[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


@dataclass(frozen=True)
class SuiteFlags:
    """A command's shared flags, the device resolved to cpu or cuda."""

    device: str
    profile: str | None = None
    backends: tuple[str, ...] = ()
    backend_only: bool = False
    allow_broken_plugins: bool = False
    packs: str = "all"
    mutant: str | None = None
    stat_alpha: float | None = None
    cells: str | None = None  # RECORD/BACKEND,... : only the tests judging these pairs
    tests: str | None = None  # tests/PATH.py,... : with `cells`, also every test of these modules

    @property
    def resolved_profile(self) -> str:
        """The profile asked for, else gate on CUDA and ci (interpreter-sized) on CPU."""
        return self.profile or ("gate" if self.device == "cuda" else "ci")

    def pytest_options(self) -> list[str]:
        options = [f"--sc-device={self.device}", f"--sc-profile={self.resolved_profile}"]
        options += [f"--sc-backend={backend}" for backend in self.backends]
        options += ["--sc-backend-only"] if self.backend_only else []
        options += ["--sc-allow-broken-plugins"] if self.allow_broken_plugins else []
        options += [f"--sc-packs={self.packs}"] if self.packs != "all" else []
        options += [f"--sc-mutant={self.mutant}"] if self.mutant else []
        options += [f"--sc-stat-alpha={self.stat_alpha:g}"] if self.stat_alpha is not None else []
        options += [f"--sc-cells={self.cells}"] if self.cells is not None else []
        options += [f"--sc-tests={self.tests}"] if self.tests else []
        return options


def parser(name: str, description: str, **kwargs) -> argparse.ArgumentParser:
    """The parser of `samplecheck NAME`. Flags are never abbreviated: an argument the command
    does not know goes to pytest as written (`--dev` is not `--device`)."""
    return argparse.ArgumentParser(prog=f"samplecheck {name}", description=description, allow_abbrev=False, **kwargs)


def add_device(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default="auto", choices=DEVICES,
                        help="where kernels run: auto (CUDA when available), cpu (Triton interpreter), cuda")


def add_suite_flags(parser: argparse.ArgumentParser, *, profile: bool = True, backends: bool = True,
                    mutant: bool = True, stat_alpha: bool = True) -> None:
    """--device, and the other shared flags the command asks for."""
    add_device(parser)
    if profile:
        parser.add_argument("--profile", default=None, choices=PROFILES,
                            help="Hypothesis profile (default: gate on CUDA, ci on CPU)")
    if backends:
        parser.add_argument("--backend", dest="backends", action="append", default=[], type=_backend,
                            metavar="KERNEL=MODULE:CALLABLE",
                            help="also test this implementation of KERNEL (repeatable; docs/backends.md)")
        parser.add_argument("--backend-only", action="store_true",
                            help="test only the plugged implementations (--backend, entry points, packs), "
                                 "with only the properties that judge them")
        parser.add_argument("--allow-broken-plugins", action="store_true",
                            help="report a plug-in that fails to load and skip its tests, instead of failing the run")
        parser.add_argument("--packs", default="all", type=_packs, metavar="all|none|NAME,...",
                            help="which installed packs (third-party engines' kernels, docs/packs.md) are plugged "
                                 "(default all)")
    if mutant:
        parser.add_argument("--mutant", default=None, metavar="NAME",
                            help="run the suite against this mutant of our kernels alone "
                                 "(samplecheck killtable lists them)")
    if stat_alpha:
        parser.add_argument("--stat-alpha", type=_alpha, default=None, metavar="A",
                            help="per-test false-alarm rate of the statistical tests, in (0, 1) "
                                 "(default 1e-6; nightly 1e-8)")


def add_workers(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", default="auto", type=_workers,
                        help="pytest-xdist workers: auto (one per core) or a count, 0 for none (default auto)")


def resolve_device(parser: argparse.ArgumentParser, requested: str) -> str:
    """cpu or cuda for `requested`; without CUDA, --device=cuda ends the command with one line."""
    from samplecheck.kernels.runtime import resolve_device as resolve

    try:
        return resolve(requested)
    except RuntimeError:
        parser.exit(2, f"{parser.prog}: error: --device=cuda: no CUDA device here (torch.cuda.is_available() "
                       "is False); use --device=cpu or --device=auto\n")


def suite_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> SuiteFlags:
    """The shared flags of `args` (those the command did not add keep their defaults)."""
    return SuiteFlags(device=resolve_device(parser, args.device), profile=getattr(args, "profile", None),
                      backends=tuple(getattr(args, "backends", ())),
                      backend_only=getattr(args, "backend_only", False),
                      allow_broken_plugins=getattr(args, "allow_broken_plugins", False),
                      packs=getattr(args, "packs", "all"),
                      mutant=getattr(args, "mutant", None), stat_alpha=getattr(args, "stat_alpha", None))


def pytest_args(extra: list[str]) -> list[str]:
    """The arguments a command passes on to pytest: those it did not parse, the first `--`
    (which ends the command's own flags) dropped."""
    if "--" not in extra:
        return extra
    at = extra.index("--")
    return extra[:at] + extra[at + 1:]


def _backend(text: str) -> str:
    if not BACKEND.fullmatch(text):
        raise argparse.ArgumentTypeError(f"expected KERNEL=package.module:callable, got {text!r}")
    return text


def _packs(text: str) -> str:
    if text in ("all", "none") or all(re.fullmatch(r"[\w.-]+", name) for name in text.split(",")):
        return text
    raise argparse.ArgumentTypeError(f"must be all, none or comma-separated pack names, got {text!r}")


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}")
    return value


def _workers(text: str) -> str:
    if text != "auto" and not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be auto or a count >= 0, got {text!r}")
    return text
