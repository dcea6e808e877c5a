"""Mutation operators over a kernel module's syntax tree.

An operator takes one AST node and yields `(replacement_node, what)` pairs: the node it
would put in the source instead, and a short description. `samplecheck.tools.mutation.generate`
turns each into a source edit (the replacement unparsed in place of the node's text).
Operators never see docstrings, decorators, annotations or f-string contents: the walk in
`generate` hands them only executable code.

- compare:  boundary flips < <=, > >=, == != (each operator of a comparison)
- constant: integer literals +1 and -1
- offset:   pointers of tl.load/tl.store and subscript indices +1 and -1
- minmax:   minimum <-> maximum, min <-> max, amin <-> amax, argmin <-> argmax, clamp(min=) <-> (max=)
- mask:     tl.load/tl.store without their mask (and `other`), or keeping one side of `a & b`
- dtype:    tl/torch float32 <-> bfloat16/float16, float64 -> float32, casts dropped (x.to(float), to_fp32(x))
- reorder:  adjacent pipeline steps (calls of an op's apply_* or launch_*, bare or under an `if`) swapped
- stride:   a stride factor dropped (row * row_stride -> row), int64 offsets computed in int32,
            x.stride(0) -> x.shape[1] (rows assumed contiguous)
- division: tl.math.div_rn(a, b) -> a / b (Triton's fp32 `/`: approximate on NVIDIA GPUs, exact
            in the interpreter unless samplecheck.harness.gpu_math models it)
"""

import ast
import copy
from collections.abc import Callable, Iterator

Mutation = tuple[ast.AST, str]

FLIPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
SYMBOLS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
SWAPS = {"minimum": "maximum", "maximum": "minimum", "min": "max", "max": "min", "amin": "amax",
         "amax": "amin", "argmin": "argmax", "argmax": "argmin"}
FLOATS = {"float32": ("bfloat16", "float16"), "bfloat16": ("float32",), "float16": ("float32",), "float64": ("float32",)}
MEMORY_OPS = ("load", "store")


def _attr_call(node: ast.AST, module: str, names: tuple[str, ...]) -> bool:
    """`module.name(...)` with name in `names` (e.g. tl.load)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names
            and isinstance(node.func.value, ast.Name) and node.func.value.id == module)


def _shifted(node: ast.expr, delta: int) -> ast.expr:
    op = ast.Add() if delta > 0 else ast.Sub()
    return ast.BinOp(left=copy.deepcopy(node), op=op, right=ast.Constant(abs(delta)))


def _with(node: ast.AST, **changes) -> ast.AST:
    new = copy.deepcopy(node)
    for field, value in changes.items():
        setattr(new, field, value)
    return new


def compare(node: ast.AST) -> Iterator[Mutation]:
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in FLIPS:
                ops = list(node.ops)
                ops[i] = FLIPS[type(op)]()
                yield _with(node, ops=ops), f"{SYMBOLS[type(op)]} -> {SYMBOLS[FLIPS[type(op)]]}"


def constant(node: ast.AST) -> Iterator[Mutation]:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        for delta in (1, -1):
            yield ast.Constant(node.value + delta), f"{node.value} -> {node.value + delta}"


def offset(node: ast.AST) -> Iterator[Mutation]:
    if _attr_call(node, "tl", MEMORY_OPS) and node.args:
        for delta in (1, -1):
            args = [_shifted(node.args[0], delta), *node.args[1:]]
            yield _with(node, args=args), f"tl.{node.func.attr} pointer {delta:+d}"
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, (ast.Name, ast.BinOp, ast.Attribute)):
        for delta in (1, -1):
            yield _with(node, slice=_shifted(node.slice, delta)), f"index {delta:+d}"


def minmax(node: ast.AST) -> Iterator[Mutation]:
    if not isinstance(node, ast.Call):
        return
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in SWAPS:
        yield _with(node, func=_with(func, attr=SWAPS[func.attr])), f"{func.attr} -> {SWAPS[func.attr]}"
    elif isinstance(func, ast.Name) and func.id in ("min", "max"):
        yield _with(node, func=ast.Name(SWAPS[func.id], ast.Load())), f"{func.id} -> {SWAPS[func.id]}"
    if isinstance(func, ast.Attribute) and func.attr == "clamp":
        keywords = [_with(k, arg=SWAPS[k.arg]) if k.arg in ("min", "max") else k for k in node.keywords]
        if any(k.arg in ("min", "max") for k in node.keywords):
            yield _with(node, keywords=keywords), "clamp bounds swapped"


def mask(node: ast.AST) -> Iterator[Mutation]:
    if not _attr_call(node, "tl", MEMORY_OPS):
        return
    found = [k for k in node.keywords if k.arg == "mask"]
    if not found:
        return
    yield (_with(node, keywords=[k for k in node.keywords if k.arg not in ("mask", "other")]),
           f"tl.{node.func.attr} without its mask")
    value = found[0].value
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitAnd):
        for side, name in ((value.left, "left"), (value.right, "right")):
            keywords = [_with(k, value=side) if k.arg == "mask" else k for k in node.keywords]
            yield _with(node, keywords=keywords), f"tl.{node.func.attr} mask keeps only its {name} side"


def dtype(node: ast.AST) -> Iterator[Mutation]:
    if (isinstance(node, ast.Attribute) and node.attr in FLOATS and isinstance(node.value, ast.Name)
            and node.value.id in ("tl", "torch")):
        for other in FLOATS[node.attr]:
            yield _with(node, attr=other), f"{node.value.id}.{node.attr} -> {other}"
    elif isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "to_fp32":
            yield copy.deepcopy(node.args[0]), "to_fp32 upcast dropped"
        elif (isinstance(func, ast.Attribute) and func.attr == "to" and isinstance(node.args[0], ast.Attribute)
              and node.args[0].attr in FLOATS):
            yield copy.deepcopy(func.value), f".to({node.args[0].attr}) dropped"


def stride(node: ast.AST) -> Iterator[Mutation]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for keep, factor in ((node.left, node.right), (node.right, node.left)):
            if "stride" in ast.unparse(factor):
                yield copy.deepcopy(keep), f"stride factor {ast.unparse(factor)} dropped"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        args = node.args
        if node.func.attr == "to" and len(args) == 1 and ast.unparse(args[0]) == "tl.int64":
            yield _with(node, args=[ast.parse("tl.int32", mode="eval").body]), "int64 offset computed in int32"
        elif node.func.attr == "stride" and len(args) == 1 and ast.unparse(args[0]) == "0":
            shape = ast.parse(f"({ast.unparse(node.func.value)}).shape[1]", mode="eval").body
            yield shape, "row stride taken as the row length (rows assumed contiguous)"


DIVISIONS = ("tl.math.div_rn", "tl.div_rn")


def division(node: ast.AST) -> Iterator[Mutation]:
    if isinstance(node, ast.Call) and len(node.args) == 2 and not node.keywords \
            and ast.unparse(node.func) in DIVISIONS:
        quotient = ast.BinOp(left=copy.deepcopy(node.args[0]), op=ast.Div(), right=copy.deepcopy(node.args[1]))
        yield quotient, "div_rn -> / (the GPU's approximate division)"


OPERATORS: dict[str, Callable[[ast.AST], Iterator[Mutation]]] = {
    "compare": compare, "constant": constant, "offset": offset, "minmax": minmax,
    "mask": mask, "dtype": dtype, "stride": stride, "division": division,
}


def _pipeline_step(stmt: ast.stmt) -> bool:
    """A call of an op (its entry point apply_* or its launch_*), bare or as the only statement
    under an `if`."""
    if isinstance(stmt, ast.If) and len(stmt.body) == 1 and not stmt.orelse:
        stmt = stmt.body[0]
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id.startswith(("apply_", "launch_")))


def reorder(body: list[ast.stmt]) -> Iterator[tuple[ast.stmt, ast.stmt, str]]:
    """Adjacent pipeline steps of a statement list, to be swapped."""
    for first, second in zip(body, body[1:]):
        if _pipeline_step(first) and _pipeline_step(second):
            yield first, second, f"steps at lines {first.lineno} and {second.lineno} swapped"


ALL = (*OPERATORS, "reorder")
