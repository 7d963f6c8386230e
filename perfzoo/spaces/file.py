"""Search spaces from a TOML file: the space of *your* training job, no Python needed.

Wherever a command takes a space name it takes a file too (``--space path/to/space.toml``):
:func:`perfzoo.spaces.get` hands any name ending in ``.toml`` to :func:`load`.

The format::

    name = "my-fsdp-job"              # required: records carry it (one store, one space)
    description = "FSDP2 MLP on 2 CPU ranks"
    workload = "command"              # default: a launch command runs each config
    world_size_key = "nproc"          # the knob or constant holding the number of ranks
    throughput_unit = "samples/s"     # what the job's throughput counts (default items/s)
    command = "torchrun --standalone --nproc-per-node {nproc} train.py --batch {batch}"
    constraints = ["batch * nproc <= 256", "n_heads % tp == 0"]

    [knobs]
    batch = { values = [8, 16, 32] }                          # categorical (any scalars)
    depth = { kind = "integer", low = 2, high = 8, step = 2 }   # 2, 4, 6, 8
    lr = { kind = "float", low = 0.1, high = 0.3, step = 0.1 }  # 0.1, 0.2, 0.3

    [constants]
    nproc = 2

    [derived]                         # keys computed from the others
    global_batch = "batch * nproc"

Constraints and derived keys are expressions over knob names: numbers, strings, ``+ - * /
// % **``, comparisons, ``and or not``, ``x in (1, 2)``, ``a if cond else b`` and the functions
``min max abs``. They are parsed with :mod:`ast` and evaluated by a small interpreter, never
by ``eval``: anything else (attributes, calls, subscripts, lambdas) is refused. Every mistake
is one line naming the file, the line, the knob and the fix.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "space.toml"
>>> _ = path.write_text('name = "demo"\\nworld_size_key = "n"\\nconstraints = ["tp <= n"]\\n'
...                     '[knobs]\\ntp = { values = [1, 2, 4] }\\n[constants]\\nn = 2\\n')
>>> space = load(path)
>>> [c["tp"] for c in space.enumerate()]
[1, 2]
"""

from __future__ import annotations

import ast
import json
import operator
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Union

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from perfzoo import workloads
from perfzoo.spaces._base import Categorical, Constraint, Dimension, Integer, Space, SpaceError, SteppedFloat, names

Value = Union[bool, int, float, str, None]

TOP_KEYS = ("name", "description", "workload", "world_size_key", "throughput_unit", "command",
            "constraints", "knobs", "constants", "derived")
KINDS = ("categorical", "integer", "float")
KNOB_KEYS = {"categorical": ("kind", "values", "doc"), "integer": ("kind", "low", "high", "step", "doc"),
             "float": ("kind", "low", "high", "step", "doc")}


class SpaceFileError(SpaceError):
    """A space file is malformed; the message names the file, the line and the fix."""


# --- expressions ------------------------------------------------------------------------------

_BINARY: dict[type, Callable] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                                 ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv,
                                 ast.Mod: operator.mod, ast.Pow: operator.pow}
_COMPARE: dict[type, Callable] = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
                                  ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
                                  ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_FUNCTIONS: dict[str, Callable] = {"min": min, "max": max, "abs": abs}


@dataclass(frozen=True)
class Expression:
    """A safe arithmetic/boolean expression over knob names.

    >>> e = Expression.parse("tp * pp <= world_size")
    >>> sorted(e.names), e({"tp": 2, "pp": 2, "world_size": 4})
    (['pp', 'tp', 'world_size'], True)
    >>> Expression.parse("__import__('os')")
    Traceback (most recent call last):
    ...
    ValueError: only min, max, abs may be called, not __import__
    """

    text: str
    tree: ast.Expression
    names: frozenset

    @classmethod
    def parse(cls, text: str) -> "Expression":
        """Parse ``text``; a ``ValueError`` names what is not allowed."""
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            raise ValueError(f"not a valid expression ({exc.msg})") from None
        names: set = set()
        for node in ast.walk(tree):
            _check_node(node, names)
        return cls(text, tree, frozenset(names))

    def __call__(self, values: dict) -> Value:
        return _evaluate(self.tree.body, values)


_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Name,
            ast.Constant, ast.Tuple, ast.List, ast.Load, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd,
            ast.Call, *_BINARY, *_COMPARE)


def _check_node(node: ast.AST, names: set) -> None:
    if not isinstance(node, _ALLOWED):
        raise ValueError(f"'{type(node).__name__}' is not allowed in an expression (use knob names, numbers, "
                         "strings, arithmetic, comparisons, and/or/not, min/max/abs)")
    if isinstance(node, ast.Call):
        fn = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
        if fn not in _FUNCTIONS or node.keywords:
            raise ValueError(f"only {', '.join(_FUNCTIONS)} may be called, not {fn}")
    elif isinstance(node, ast.Name) and node.id not in _FUNCTIONS:
        names.add(node.id)
    elif isinstance(node, ast.Constant) and not isinstance(node.value, (bool, int, float, str)):
        raise ValueError(f"constant {node.value!r} is not a number, a string or a boolean")


def _evaluate(node: ast.AST, values: dict) -> Value:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_evaluate(e, values) for e in node.elts)
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_evaluate(node.left, values), _evaluate(node.right, values))
    if isinstance(node, ast.UnaryOp):
        v = _evaluate(node.operand, values)
        return (not v) if isinstance(node.op, ast.Not) else (-v if isinstance(node.op, ast.USub) else +v)
    if isinstance(node, ast.BoolOp):
        results = (_evaluate(v, values) for v in node.values)
        return all(results) if isinstance(node.op, ast.And) else any(results)
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, values)
        for op, comp in zip(node.ops, node.comparators):
            right = _evaluate(comp, values)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _evaluate(node.body if _evaluate(node.test, values) else node.orelse, values)
    if isinstance(node, ast.Call):
        return _FUNCTIONS[node.func.id](*(_evaluate(a, values) for a in node.args))
    raise ValueError(f"cannot evaluate {type(node).__name__}")  # unreachable after _check_node


# --- the file -----------------------------------------------------------------------------------

class _Lines:
    """Finds the line a key or a string sits on, for error messages (tomllib keeps no positions)."""

    def __init__(self, path: Path, text: str):
        self.path = path
        self.lines = text.splitlines()

    def find(self, *patterns: str, section: Optional[str] = None) -> int:
        start = 0
        if section is not None:
            for i, line in enumerate(self.lines):
                if re.match(rf"\s*\[\s*{re.escape(section)}\s*\]", line):
                    start = i
                    break
        for pattern in patterns:
            for i in range(start, len(self.lines)):
                if re.search(pattern, self.lines[i]):
                    return i + 1
        return start + 1

    def string_line(self, text: str, after: int = 1) -> int:
        """The line, from line ``after`` on, that holds the TOML string ``text`` as written: as is,
        or with a basic string's escapes (``\\"``, ``\\\\``); ``after`` when none does."""
        spellings = dict.fromkeys([text, json.dumps(text)[1:-1]])
        for i in range(after - 1, len(self.lines)):
            if any(s in self.lines[i] for s in spellings):
                return i + 1
        return after

    def error(self, line: int, message: str) -> SpaceFileError:
        return SpaceFileError(f"{self.path} line {line}: {message}")

    def key_line(self, key: str, section: Optional[str] = None) -> int:
        k = re.escape(key)
        return self.find(rf"^\s*\[\s*{re.escape(section or '')}\.{k}\s*\]", rf"^\s*[\"']?{k}[\"']?\s*=",
                         section=section)


def _knob(name: str, spec: object, lines: _Lines) -> Dimension:
    at = lines.key_line(name, "knobs")
    if not isinstance(spec, dict):
        raise lines.error(at, f"knob '{name}': expected a table such as {{ values = [1, 2] }} or "
                              "{ kind = \"integer\", low = 1, high = 8 }")
    kind = spec.get("kind", "categorical" if "values" in spec else None)
    if kind not in KINDS:
        raise lines.error(at, f"knob '{name}': unknown kind {kind!r}; kinds are {', '.join(KINDS)} "
                              "(categorical takes values = [...], integer and float take low, high, step)")
    unknown = [k for k in spec if k not in KNOB_KEYS[kind]]
    if unknown:
        raise lines.error(at, f"knob '{name}': unknown key '{unknown[0]}' for kind {kind}; "
                              f"keys are {', '.join(KNOB_KEYS[kind])}")
    doc = str(spec.get("doc", ""))
    if kind == "categorical":
        values = spec.get("values")
        if not isinstance(values, list) or not values:
            raise lines.error(at, f"knob '{name}': values must be a non-empty list, e.g. values = [1, 2, 4]")
        if any(isinstance(v, (list, dict)) for v in values):
            raise lines.error(at, f"knob '{name}': values must be numbers, strings or booleans")
        if len({repr(v) for v in values}) != len(values):
            raise lines.error(at, f"knob '{name}': values repeat; list each value once")
        return Categorical(name, doc, choices=tuple(values))
    missing = [k for k in ("low", "high") if k not in spec]
    if missing:
        raise lines.error(at, f"knob '{name}': kind {kind} needs {missing[0]} (and low, high, step)")
    num = int if kind == "integer" else (int, float)
    low, high, step = spec["low"], spec["high"], spec.get("step", 1)
    if not all(isinstance(v, num) and not isinstance(v, bool) for v in (low, high, step)):
        raise lines.error(at, f"knob '{name}': low, high and step of a {kind} knob must be "
                              f"{'integers' if kind == 'integer' else 'numbers'}")
    if step <= 0 or low > high:
        raise lines.error(at, f"knob '{name}': bad range low={low}, high={high}, step={step}; "
                              "need low <= high and step > 0")
    n = (high - low) / step
    if abs(n - round(n)) > 1e-9:
        raise lines.error(at, f"knob '{name}': high - low = {high - low:g} is not a multiple of step = {step:g}; "
                              f"set high to {low + int(n) * step:g}")
    if kind == "integer":
        return Integer(name, doc, low=low, high=high, step=step)
    return SteppedFloat(name, doc, low=float(low), high=float(high), step=float(step))


def _constraint(text: object, known: set, lines: _Lines) -> Constraint:
    if not isinstance(text, str):
        raise lines.error(lines.key_line("constraints"), f"constraint {text!r}: write each constraint as a string, "
                                                         "e.g. \"tp * pp <= world_size\"")
    at = lines.string_line(text, after=lines.key_line("constraints"))
    try:
        expr = Expression.parse(text)
    except ValueError as exc:
        raise lines.error(at, f"constraint '{text}': {exc}") from None
    unknown = sorted(expr.names - known)
    if unknown:
        raise lines.error(at, f"constraint '{text}' names '{unknown[0]}', which is not a knob or a constant; "
                              f"they are {sorted(known)}")

    def check(config: dict) -> Optional[str]:
        try:
            ok = expr(config)
        except (TypeError, ZeroDivisionError, ArithmeticError) as exc:
            return f"'{text}' cannot be evaluated ({exc})"
        if ok:
            return None
        shown = ", ".join(f"{k}={config[k]!r}" for k in sorted(expr.names))
        return f"'{text}' does not hold for {shown}"

    return Constraint(text, check, where=f"{lines.path} line {at}")


def _derived(table: dict, known: set, lines: _Lines) -> Optional[Callable[[dict], dict]]:
    if not table:
        return None
    exprs: dict[str, Expression] = {}
    for key, text in table.items():
        at = lines.key_line(key, "derived")
        if not isinstance(text, str):
            raise lines.error(at, f"derived key '{key}': write its expression as a string, e.g. \"batch * nproc\"")
        try:
            expr = Expression.parse(text)
        except ValueError as exc:
            raise lines.error(at, f"derived key '{key}' = '{text}': {exc}") from None
        unknown = sorted(expr.names - known - set(exprs))
        if unknown:
            raise lines.error(at, f"derived key '{key}' = '{text}' names '{unknown[0]}', which is not a knob, "
                                  "a constant or an earlier derived key")
        exprs[key] = expr

    def derive(config: dict) -> dict:
        values = dict(config)
        out = {}
        for key, expr in exprs.items():
            try:
                out[key] = values[key] = expr(values)
            except (TypeError, ZeroDivisionError, ArithmeticError) as exc:
                raise SpaceError(f"derived key '{key}' = '{expr.text}' cannot be evaluated ({exc})") from None
        return out

    return derive


@dataclass(repr=False)
class FileSpace(Space):
    """A :class:`~perfzoo.spaces.Space` read from a file: it keeps the file's path, the launch
    command and the throughput unit of the job it describes."""

    path: str = ""
    command: Optional[str] = None
    throughput_unit: str = "items/s"

    @property
    def ref(self) -> str:
        return self.path


def load(path: Union[str, Path]) -> FileSpace:
    """The space a TOML file describes (see the module docstring); a :class:`SpaceFileError` names
    the line of any mistake."""
    path = Path(path)
    if not path.is_file():
        raise SpaceFileError(f"space file {path}: no such file (a built-in space is given by name: "
                             f"{', '.join(names())})")
    try:
        text = path.read_text()
    except UnicodeDecodeError as exc:
        raise SpaceFileError(f"space file {path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    lines = _Lines(path, text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpaceFileError(f"{path}: not valid TOML: {exc}") from None
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise lines.error(lines.key_line(unknown[0]), f"unknown key '{unknown[0]}'; a space file holds "
                                                      f"{', '.join(TOP_KEYS)}")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise lines.error(1, "the space needs a name, e.g. name = \"my-job\" (records carry it)")
    knobs = data.get("knobs")
    if not isinstance(knobs, dict) or not knobs:
        raise lines.error(lines.key_line("knobs"), "the space needs at least one knob under [knobs], "
                                                   "e.g. batch = { values = [8, 16] }")
    dims = [_knob(k, v, lines) for k, v in knobs.items()]
    constants = data.get("constants", {})
    if not isinstance(constants, dict):
        raise lines.error(lines.key_line("constants"), "constants must be a table: [constants] then key = value lines")
    for k, v in constants.items():
        if k in knobs:
            raise lines.error(lines.key_line(k, "constants"), f"'{k}' is both a knob and a constant; keep one")
        if isinstance(v, (list, dict)):
            raise lines.error(lines.key_line(k, "constants"), f"constant '{k}' must be a number, string or boolean")
    known = set(knobs) | set(constants)
    derived_table = data.get("derived", {})
    if not isinstance(derived_table, dict):
        raise lines.error(lines.key_line("derived"), "derived must be a table: [derived] then key = \"expression\"")
    derived = _derived(derived_table, known, lines)
    known |= set(derived_table)
    raw_constraints = data.get("constraints", [])
    if not isinstance(raw_constraints, list):
        raise lines.error(lines.key_line("constraints"), "constraints must be a list of strings, "
                                                         "e.g. constraints = [\"tp <= world_size\"]")
    constraints = [_constraint(c, known - set(derived_table), lines) for c in raw_constraints]
    workload = data.get("workload", "command")
    if isinstance(workload, str) and workload not in workloads.names():  # said before the keys it would need
        raise lines.error(lines.key_line("workload"), f"workload = '{workload}' is not a workload perfzoo knows; known: "
                                                      f"{', '.join(workloads.names())} (register yours with perfzoo.workloads.register)")
    wkey = data.get("world_size_key", "world_size")
    if wkey not in set(knobs) | set(constants):
        raise lines.error(lines.key_line("world_size_key") if "world_size_key" in data else 1,
                          f"world_size_key = '{wkey}' is not a knob or a constant; add [constants] {wkey} = 1 "
                          "(the number of ranks a job runs on) or name the knob that holds it")
    for key in ("description", "workload", "throughput_unit", "command"):
        if key in data and not isinstance(data[key], str):
            raise lines.error(lines.key_line(key), f"{key} must be a string")
    return FileSpace(name=name.strip(), workload=data.get("workload", "command"), dimensions=dims,
                     constants=dict(constants), derived=derived, constraints=constraints, world_size_key=wkey,
                     description=data.get("description", f"space read from {path}"),
                     path=str(path),
                     command=data.get("command"), throughput_unit=data.get("throughput_unit", "items/s"))
