"""Mutants generated mechanically from our kernel modules, as `samplecheck.mutants.Mutant`s.

Each kernel module with a registered `triton` backend is parsed; the code reachable from the
backend's entry point (the entry function, the module functions it names, transitively, and
the module's top-level assignments such as block sizes) is walked, and every operator of
`samplecheck.tools.mutation.operators` proposes replacements for its nodes. A replacement
becomes a source patch (find the node's lines, replace them with the node unparsed in
place), widened by neighbouring lines until `find` occurs exactly once, as the mutant
machinery requires. Kept are the patches that parse, change the module's syntax tree (not
just its formatting), differ from every other kept mutant's tree and import.

A mutant's name is `KERNEL-OPERATOR-HASH`, the hash of its module and patch: it stays the
same while the patched lines do, so recorded dispositions follow it across runs.
"""

import ast
import hashlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from samplecheck import mutants as machinery
from samplecheck.mutants import Mutant
from samplecheck.tools.mutation.operators import ALL, OPERATORS, reorder

KERNEL_PACKAGE = "samplecheck.kernels."
DEVICES = ("cpu", "cuda")
ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


@dataclass(frozen=True)
class Target:
    """A kernel module under mutation: the registry record and the entry point it backs."""

    kernel: str
    module: str
    entry: str


def targets() -> list[Target]:
    """Our Triton kernels: every registered backend named `triton` in samplecheck.kernels."""
    from samplecheck.harness.plugins import register_all
    from samplecheck.registry.matrix import REGISTRY

    if not REGISTRY:
        register_all()
    found = []
    for info in REGISTRY.values():
        for backend in info.backends:
            module, _, entry = backend.target.partition(":")
            if backend.name == "triton" and module.startswith(KERNEL_PACKAGE):
                found.append(Target(info.name, module, entry))
    return found


def _reachable(tree: ast.Module, entry: str) -> list[ast.FunctionDef]:
    """The module's functions that `entry` reaches by name, transitively."""
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    seen, todo = [], [entry]
    while todo:
        name = todo.pop()
        if name in functions and functions[name] not in seen:
            seen.append(functions[name])
            todo += [n.id for n in ast.walk(functions[name]) if isinstance(n, ast.Name)]
    return sorted(seen, key=lambda f: f.lineno)


def _executable(node: ast.AST) -> Iterator[ast.AST]:
    """`node` and its descendants that run as code: no docstrings, decorators, signatures,
    annotations, f-string contents or raise statements (error wording only)."""
    if isinstance(node, (ast.JoinedStr, ast.Raise)):
        return
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return
    yield node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        children = node.body
    elif isinstance(node, ast.AnnAssign):
        children = [node.target] + ([node.value] if node.value else [])
    else:
        children = list(ast.iter_child_nodes(node))
    for child in children:
        yield from _executable(child)


class Source:
    """A module's text with byte-offset splicing (AST columns count UTF-8 bytes)."""

    def __init__(self, text: str):
        self.text = text
        self.data = text.encode()
        self.line_starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))

    def offset(self, line: int, col: int) -> int:
        return self.line_starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, start: int, end: int) -> str:
        return self.data[start:end].decode()

    def patch(self, start: int, end: int, text: str) -> tuple[str, str]:
        """(find, replace): the whole lines around [start, end), widened until `find` is unique."""
        first = self.data.rfind(b"\n", 0, start) + 1
        last = self.data.find(b"\n", end)
        last = len(self.data) if last < 0 else last
        while True:
            find = self.segment(first, last)
            if self.text.count(find) == 1 or (first == 0 and last == len(self.data)):
                break
            first = self.data.rfind(b"\n", 0, max(first - 1, 0)) + 1
            later = self.data.find(b"\n", last + 1)
            last = len(self.data) if later < 0 else later
        return find, self.segment(first, start) + text + self.segment(end, last)


def _unparsed(node: ast.AST) -> str:
    text = ast.unparse(node)
    atom = isinstance(node, ATOMS) or isinstance(node, ast.Constant) and not text.startswith("-")
    return text if atom else f"({text})"


def _device_entries(tree: ast.Module) -> dict[int, str]:
    """id(node) -> device, for the nodes of per-device settings ({"cpu": ..., "cuda": ...}):
    mutating them changes behaviour on that device alone."""
    devices = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value in DEVICES:
                    devices.update((id(n), key.value) for n in ast.walk(value))
    return devices


def _edits(tree: ast.Module, source: Source, entry: str,
           operators: tuple[str, ...]) -> Iterator[tuple[str, int, str, int, int, str, tuple[str, ...]]]:
    """(operator, line, description, start, end, new text, devices) for every proposed replacement."""
    per_device = _device_entries(tree)
    roots = [n for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))] + _reachable(tree, entry)
    for root in roots:
        for node in _executable(root):
            for name in operators:
                if name in OPERATORS:
                    for new, what in OPERATORS[name](node):
                        start, end = source.span(node)
                        devices = (per_device[id(node)],) if id(node) in per_device else DEVICES
                        yield name, node.lineno, what, start, end, _unparsed(new), devices
            if "reorder" in operators:
                for field in ("body", "orelse"):
                    body = getattr(node, field, None)
                    for first, second, what in reorder(body if isinstance(body, list) else []):
                        (start, mid), (mid2, end) = source.span(first), source.span(second)
                        text = source.segment(mid2, end) + source.segment(mid, mid2) + source.segment(start, mid)
                        yield "reorder", first.lineno, what, start, end, text, DEVICES


def generate(target: Target, operators: tuple[str, ...] = ALL) -> list[Mutant]:
    """The distinct, parseable mutants of `target`'s module (not yet import-checked)."""
    path = Path(importlib.util.find_spec(target.module).origin)
    text = path.read_text()
    tree = ast.parse(text)
    source = Source(text)
    seen = {ast.dump(tree)}
    found = []
    for operator, line, what, start, end, new, devices in _edits(tree, source, target.entry, operators):
        patched = source.segment(0, start) + new + source.segment(end, len(source.data))
        try:
            dump = ast.dump(ast.parse(patched))
        except SyntaxError:
            continue
        if dump in seen:
            continue
        seen.add(dump)
        find, replace = source.patch(start, end, new)
        digest = hashlib.sha1(f"{target.module}\0{find}\0{replace}".encode()).hexdigest()[:8]
        found.append(Mutant(
            name=f"{target.kernel}-{operator}-{digest}", kernel=target.kernel, module=target.module,
            entry=target.entry, find=find, replace=replace,
            description=f"{operator}: {what} ({path.name}:{line})", ref="generated by samplecheck mutate",
            devices=devices))
    return found


def importable(mutant: Mutant) -> str | None:
    """None when the patched module imports (through the mutant machinery), else the error."""
    machinery.MUTANTS[mutant.name] = mutant
    try:
        machinery.load(mutant.name)
    except Exception as err:  # noqa: BLE001 (any error of the patched module's top level)
        del machinery.MUTANTS[mutant.name]
        return f"{type(err).__name__}: {err}"
    return None
