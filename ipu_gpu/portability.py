"""``ipu-gpu check PROGRAM.py [MORE.py ...]``: which TensorFlow, IPU, Keras and PopTorch
symbols a program uses, and which of them ipu_gpu provides, read from the program's AST
without running it.

A symbol is a dotted name reached from an import of an aliased package
(``aliases.TOP_LEVELS``): the imported module or name itself (``tensorflow.python.ipu``,
``tensorflow.python.ipu.config.IPUConfig``) and every attribute chain from a name bound to one
(``tf.keras.layers.Dense`` is ``tensorflow.keras.layers.Dense``). A chain stops at the first
call or subscript: ``ipu.config.IPUConfig().auto_select_ipus`` uses
``tensorflow.python.ipu.config.IPUConfig``; attributes of instances are out of reach. ``name =
<chain>`` assignments are followed (``layers = tf.keras.layers``). Names a program uses after
``from M import *`` are reported as ``M.name``, and the star import as ``M.*``.

Each symbol is resolved with ``aliases.resolve``, the code the import hook of ``ipu-gpu run``
runs, under the TensorFlow version ``aliases.detect_tf_version`` gives for the file, so
``check`` and ``run`` agree. Notebooks (``.ipynb``) are read from their code cells; shell and
magic lines (``!``, ``%``) are skipped and cells in another language (``%%bash``) left out.

Out of reach: dynamic access (``getattr(tf, name)``, ``importlib``), attributes of objects a
call returned, and packages that are not aliased (``torch``, ``numpy``): PopTorch programs
still need the real PyTorch.
"""

from __future__ import annotations

import ast
import builtins
import json
import os
import tokenize
from dataclasses import dataclass, field

from . import aliases
from .compat import behavior

# Report groups, most specific first wins (a symbol belongs to the longest matching prefix);
# the order here is the order of the report.
GROUPS = ("tensorflow.python.ipu", "tensorflow.keras", "tensorflow.python.keras",
          "tensorflow.compat.v1", "tensorflow.python", "tensorflow", "keras",
          "ipu_tensorflow_addons", "poptorch", "popdist")

# Names a notebook's code may use that IPython binds.
_IPYTHON_NAMES = frozenset({"get_ipython", "display", "In", "Out", "_", "__", "___"})
# Cell magics whose body is still Python (%%writefile bodies are scripts the notebook runs).
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "writefile", "file",
                                 "debug", "python", "python3"})
_CHECK_HINT = " (`ipu-gpu check"


def group_of(symbol: str) -> str:
    """The report group of a dotted symbol: the longest prefix of it in ``GROUPS``."""
    best = symbol.split(".")[0]
    for g in GROUPS:
        if (symbol == g or symbol.startswith(g + ".")) and len(g) > len(best):
            best = g
    return best


# ---- the report -----------------------------------------------------------------------------
@dataclass
class Symbol:
    """One symbol a file uses: its dotted ``name``, whether ipu_gpu provides it, the lines
    using it (for notebooks also ``cells``: (code cell, line in cell) per line), how it was
    first written, and for a missing symbol the first prefix ipu_gpu lacks and why."""

    name: str
    provided: bool
    lines: list
    as_written: str
    missing: str | None = None
    reason: str | None = None
    cells: list | None = None

    @property
    def group(self) -> str:
        return group_of(self.name)

    def to_dict(self) -> dict:
        d = {"symbol": self.name, "provided": self.provided, "lines": self.lines,
             "as_written": self.as_written}
        if self.cells is not None:
            d["cells"] = [list(c) for c in self.cells]
        if not self.provided:
            d["missing"] = self.missing
            d["reason"] = self.reason
        return d


@dataclass
class FileReport:
    """What one file uses. ``errors`` lists what could not be read ({line, message}, plus
    ``cell`` in a notebook); a file with errors is never reported as fully provided."""

    path: str
    tf_version: int | None
    symbols: list = field(default_factory=list)
    errors: list = field(default_factory=list)

    @property
    def provided(self) -> list:
        return [s for s in self.symbols if s.provided]

    @property
    def missing(self) -> list:
        return [s for s in self.symbols if not s.provided]

    def groups(self) -> dict:
        """{group: [Symbol, ...]} in ``GROUPS`` order, symbols sorted by name."""
        out: dict = {}
        order = {g: i for i, g in enumerate(GROUPS)}
        for s in sorted(self.symbols, key=lambda s: (order.get(s.group, len(GROUPS)),
                                                     s.group, s.name)):
            out.setdefault(s.group, []).append(s)
        return out

    def to_dict(self) -> dict:
        return {"path": self.path, "tf_version": self.tf_version, "errors": self.errors,
                "provided": len(self.provided), "missing": len(self.missing),
                "groups": {g: [s.to_dict() for s in syms]
                           for g, syms in self.groups().items()}}


@dataclass
class Report:
    """The portability report of several files."""

    files: list

    @property
    def ok(self) -> bool:
        """True when every symbol is provided and every file was read."""
        return all(not f.missing and not f.errors for f in self.files)

    @property
    def exit_status(self) -> int:
        return 0 if self.ok else 1

    def missing_symbols(self) -> list:
        return sorted({s.name for f in self.files for s in f.missing})

    def to_dict(self) -> dict:
        symbols = [s for f in self.files for s in f.symbols]
        return {
            "files": [f.to_dict() for f in self.files],
            "summary": {
                "files": len(self.files),
                "files_with_errors": sum(bool(f.errors) for f in self.files),
                "symbols": len(symbols),
                "provided": sum(s.provided for s in symbols),
                "missing": sum(not s.provided for s in symbols),
                "missing_symbols": self.missing_symbols(),
                "ok": self.ok,
            },
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_text(self) -> str:
        out = []
        for f in self.files:
            version = "" if f.tf_version is None else f" (TensorFlow {f.tf_version})"
            out.append(f"{f.path}{version}: {len(f.symbols)} symbols, {len(f.provided)} "
                       f"provided, {len(f.missing)} missing")
            for e in f.errors:
                where = f"cell {e['cell']}:{e['line']}" if "cell" in e else str(e["line"])
                out.append(f"  ERROR    {f.path}:{where}: {e['message']}")
            for g, syms in f.groups().items():
                out.append(f"  {g}")
                width = max(len(s.name) for s in syms)
                for s in syms:
                    mark = "ok      " if s.provided else "MISSING "
                    line = f"    {mark} {s.name:<{width}}  {f.path}:{_where(s)}"
                    if not s.provided:
                        line += f"  ({s.reason})"
                    out.append(line)
        symbols = [s for f in self.files for s in f.symbols]
        errors = sum(bool(f.errors) for f in self.files)
        missing = sum(not s.provided for s in symbols)
        out.append(f"{len(self.files)} file(s): {len(symbols)} symbols, "
                   f"{len(symbols) - missing} provided, {missing} missing"
                   + (f"; {errors} file(s) could not be read fully" if errors else "")
                   + ("" if self.ok else " - not fully provided"))
        return "\n".join(out)


def _where(s: Symbol, limit: int = 8) -> str:
    if s.cells is not None:
        places = [f"cell{c}:{line}" for c, line in s.cells]
    else:
        places = [str(line) for line in s.lines]
    more = f",... ({len(places)} uses)" if len(places) > limit else ""
    return ",".join(places[:limit]) + more


# ---- entry point ----------------------------------------------------------------------------
def expand_paths(paths) -> list:
    """Files to check: each path itself, or a directory's .py and .ipynb files (recursively,
    sorted, hidden folders and checkpoints left out). Raises FileNotFoundError for a path
    that does not exist."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                                 and d not in ("__pycache__", ".ipynb_checkpoints"))
                files += [os.path.join(root, n) for n in sorted(names)
                          if n.endswith((".py", ".ipynb"))]
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise FileNotFoundError(f"can't open file {p!r}: no such file or directory")
    return files


def check_files(paths, tf_version: int | None = None) -> Report:
    """The portability report of ``paths`` (files, or directories of .py/.ipynb files).

    Args:
      paths: the program files (``.py``, ``.ipynb``) or directories.
      tf_version: 1 or 2 forces the TensorFlow each file is read for (``ipu-gpu run
        --tf1/--tf2``); None takes ``aliases.detect_tf_version`` of each file.
    Returns:
      A Report: per file, each symbol once with all its lines, provided or missing.
    Raises:
      FileNotFoundError: a path does not exist (nothing is checked).
      ValueError: tf_version is not 1, 2 or None.
    """
    if tf_version not in (1, 2, None):
        raise ValueError(f"check_files: tf_version must be 1, 2 or None, got {tf_version!r}")
    return Report([check_file(p, tf_version) for p in expand_paths(paths)])


def check_file(path: str, tf_version: int | None = None) -> FileReport:
    """The FileReport of one file; a file that cannot be read or parsed is reported with
    ``errors``, never raised."""
    tree, source, cell_of, errors = _load(path)
    if tree is None:
        return FileReport(path, None, errors=errors)
    version = tf_version or aliases.detect_tf_version(source)
    report = FileReport(path, version, errors=errors)
    saved = behavior.tf_version()
    behavior.set_tf_version(version)  # what `import tensorflow` shows this file
    try:
        uses = _Analyzer(tree).run()
        for name in sorted(uses):
            u = uses[name]
            ok, missing, reason = _status(name)
            if ok and u.failure is not None:
                ok, (missing, reason) = False, u.failure
            lines = sorted(u.lines)
            cells = [cell_of(line) for line in lines] if cell_of is not None else None
            report.symbols.append(Symbol(name, ok, lines, u.as_written,
                                         None if ok else missing, None if ok else reason,
                                         cells))
    finally:
        behavior.set_tf_version(saved)
    return report


# ---- resolution -----------------------------------------------------------------------------
def _resolve(symbol: str) -> tuple:
    """aliases.resolve, with anything a target module raises while loading reported as a
    reason instead of escaping."""
    try:
        return aliases.resolve(symbol)
    except Exception as e:  # noqa: BLE001 - a broken target is a missing symbol here
        return False, f"{type(e).__name__}: {e}"


def _star_names(module_symbol: str):
    """The names ``from module_symbol import *`` binds at run time, or None when it binds
    none: an alias module with no ``__all__`` exports only what earlier accesses cached."""
    ok, module = _resolve(module_symbol)
    if not ok:
        return None
    try:
        names = module.__all__
    except AttributeError:
        return None
    return frozenset(names)


def _status(symbol: str) -> tuple:
    """(provided, first missing prefix, reason) of a symbol under the current TF version."""
    if symbol.endswith(".*"):
        module = symbol[:-2]
        ok, reason = _resolve(module)
        if not ok:
            return False, _first_missing(module), _short(reason)
        if _star_names(module) is None:
            return False, symbol, (f"`from {module} import *` binds no names under "
                                   f"ipu_gpu's aliases (the alias module has no __all__)")
        return True, None, None
    ok, reason = _resolve(symbol)
    if ok:
        return True, None, None
    return False, _first_missing(symbol), _short(reason)


def _first_missing(symbol: str) -> str:
    parts = symbol.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if not _resolve(prefix)[0]:
            return prefix
    return symbol


def _short(reason) -> str:
    """resolve's reason without the alias module's preamble and the hint to run check."""
    reason = str(reason)
    cut = reason.find(_CHECK_HINT)
    reason = reason[:cut] if cut >= 0 else reason
    start = reason.find("ipu_gpu does not emulate ")
    return reason[start:] if start >= 0 else reason


# ---- reading files --------------------------------------------------------------------------
def _load(path: str):
    """(module AST or None, source for detect_tf_version, cell_of or None, errors)."""
    if path.endswith(".ipynb"):
        return _load_notebook(path)
    try:
        with tokenize.open(path) as f:  # honours a coding declaration, as python does
            source = f.read()
        return ast.parse(source, filename=path), source, None, []
    except SyntaxError as e:
        return None, "", None, [{"line": e.lineno or 0, "message": _syntax_message(e)}]
    except (UnicodeDecodeError, ValueError, OSError) as e:
        return None, "", None, [{"line": 0, "message": f"{type(e).__name__}: {e}"}]


def _syntax_message(e: SyntaxError) -> str:
    return f"{type(e).__name__}: {e.msg}"


def _notebook_cells(path: str) -> list:
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    cells = nb.get("cells")
    if cells is None:  # nbformat 3 keeps cells in worksheets
        cells = [c for ws in nb.get("worksheets", []) for c in ws.get("cells", [])]
    out = []
    for c in cells:
        if c.get("cell_type") != "code":
            continue
        src = c.get("source", c.get("input", ""))
        out.append("".join(src) if isinstance(src, list) else str(src))
    return out


def _clean_cell(source: str) -> str | None:
    """A code cell's Python: shell and magic lines become ``pass`` (keeping line numbers and
    blocks intact); None for a cell in another language (``%%bash``, ``%%html``)."""
    lines = source.split("\n")
    first = lines[0].strip() if lines else ""
    if first.startswith("%%") and first[2:].split(" ")[0] not in _PYTHON_CELL_MAGICS:
        return None
    out = []
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith(("!", "%")):
            line = line[:len(line) - len(stripped)] + "pass"
        out.append(line)
    return "\n".join(out)


def _load_notebook(path: str):
    try:
        cells = _notebook_cells(path)
    except (ValueError, OSError, AttributeError, TypeError) as e:
        return None, "", None, [{"line": 0, "message": f"not a notebook: {e}"}]
    body, sources, errors, starts = [], [], [], []  # starts: (first line, cell number)
    offset = 0
    for number, raw in enumerate(cells, 1):
        source = _clean_cell(raw)
        if source is None:
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError as e:
            errors.append({"cell": number, "line": e.lineno or 0,
                           "message": _syntax_message(e)})
            continue
        ast.increment_lineno(tree, offset)
        body += tree.body
        sources.append(source)
        starts.append((offset + 1, number))
        offset += source.count("\n") + 1

    def cell_of(line: int) -> tuple:
        start, number = max(s for s in starts if s[0] <= line)
        return number, line - start + 1

    module = ast.Module(body=body, type_ignores=[])
    return module, "\n".join(sources), cell_of, errors


# ---- the analysis ---------------------------------------------------------------------------
_FREE = object()  # a name no scope binds


@dataclass
class _Binding:
    """A name bound to a symbol: an aliased import (``symbol``) or ``name = <chain>``
    (``chain``, looked up in ``scope`` when needed). ``pos`` is where it takes effect (the
    end of its statement); ``alternative`` marks a fallback (an except handler, an else)."""

    pos: tuple
    alternative: bool
    symbol: str | None = None
    chain: tuple | None = None  # (base Name node, [attrs])
    scope: _Scope | None = None


class _Scope:
    def __init__(self, kind: str, parent: _Scope | None):
        self.kind = kind  # module, function, class, comprehension
        self.parent = parent
        self.bindings: dict = {}  # name -> [_Binding]
        self.others: set = set()  # names bound to anything else
        self.globals: set = set()
        self.nonlocals: set = set()


@dataclass
class _Use:
    lines: set = field(default_factory=set)
    as_written: str = ""
    failure: tuple | None = None  # (missing, reason) where a use fails whatever resolve says


def _chain(node):
    """(base Name, [attr, ...]) when ``node`` is ``name.a.b...`` (no calls or subscripts)."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return node, attrs[::-1]
    return None


def _end(node) -> tuple:
    return (getattr(node, "end_lineno", node.lineno) or node.lineno,
            getattr(node, "end_col_offset", 0) or 0)


def _pos(node) -> tuple:
    return node.lineno, node.col_offset


def _aliased(module: str | None) -> bool:
    return bool(module) and module.split(".")[0] in aliases.TOP_LEVELS


class _Analyzer:
    """Two passes over one module: the first records what every scope binds, the second
    resolves each use of a name to the symbol bound to it, Python's scoping rules included
    (class bodies are invisible to nested functions, ``global``/``nonlocal``)."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.module = _Scope("module", None)
        self.scopes: dict = {}  # id(scope node) -> _Scope
        self.uses: dict = {}  # symbol -> _Use
        self.stars: list = []  # (module symbol, pos) of `from aliased import *`
        self.other_stars = False
        self.free: list = []  # (name, node) of names no scope binds
        self.collecting = True
        self.alternative = False
        self.resolving: set = set()

    def run(self) -> dict:
        self.collecting = True
        self._body(self.tree.body, self.module)
        self.collecting = False
        self._body(self.tree.body, self.module)
        self._resolve_free()
        return self.uses

    # -- traversal shared by both passes --
    def _body(self, stmts, scope):
        for s in stmts:
            self._node(s, scope)

    def _node(self, node, scope):
        method = getattr(self, "_v_" + type(node).__name__, None)
        if method is not None:
            method(node, scope)
        else:
            self._children(node, scope)

    def _children(self, node, scope):
        for child in ast.iter_child_nodes(node):
            self._node(child, scope)

    def _child_scope(self, node, kind, scope) -> _Scope:
        if self.collecting:
            self.scopes[id(node)] = _Scope(kind, scope)
        return self.scopes[id(node)]

    def _bind_other(self, name: str, scope: _Scope):
        if self.collecting:
            self._target_scope(name, scope).others.add(name)

    def _bind(self, name: str, scope: _Scope, binding: _Binding):
        if self.collecting:
            self._target_scope(name, scope).bindings.setdefault(name, []).append(binding)

    def _target_scope(self, name, scope):
        return self.module if name in scope.globals else scope

    def _v_FunctionDef(self, node, scope):
        for d in node.decorator_list:
            self._node(d, scope)
        self._arguments_outside(node.args, scope)
        if node.returns is not None:
            self._node(node.returns, scope)
        self._bind_other(node.name, scope)
        inner = self._child_scope(node, "function", scope)
        self._bind_arguments(node.args, inner)
        saved, self.alternative = self.alternative, False
        self._body(node.body, inner)
        self.alternative = saved

    _v_AsyncFunctionDef = _v_FunctionDef

    def _v_Lambda(self, node, scope):
        self._arguments_outside(node.args, scope)
        inner = self._child_scope(node, "function", scope)
        self._bind_arguments(node.args, inner)
        self._node(node.body, inner)

    def _arguments_outside(self, args, scope):
        for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self._node(d, scope)
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None and a.annotation is not None:
                self._node(a.annotation, scope)

    def _bind_arguments(self, args, inner):
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None:
                self._bind_other(a.arg, inner)

    def _v_ClassDef(self, node, scope):
        for n in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self._node(n, scope)
        self._bind_other(node.name, scope)
        inner = self._child_scope(node, "class", scope)
        saved, self.alternative = self.alternative, False
        self._body(node.body, inner)
        self.alternative = saved

    def _comprehension(self, node, scope, results):
        gens = node.generators
        self._node(gens[0].iter, scope)
        inner = self._child_scope(node, "comprehension", scope)
        for i, g in enumerate(gens):
            if i:
                self._node(g.iter, inner)
            self._node(g.target, inner)
            for cond in g.ifs:
                self._node(cond, inner)
        for r in results:
            self._node(r, inner)

    def _v_ListComp(self, node, scope):
        self._comprehension(node, scope, [node.elt])

    _v_SetComp = _v_GeneratorExp = _v_ListComp

    def _v_DictComp(self, node, scope):
        self._comprehension(node, scope, [node.key, node.value])

    def _v_Global(self, node, scope):
        if self.collecting:
            scope.globals.update(node.names)

    def _v_Nonlocal(self, node, scope):
        if self.collecting:
            scope.nonlocals.update(node.names)

    def _v_Try(self, node, scope):
        self._body(node.body, scope)
        saved, self.alternative = self.alternative, True
        for h in node.handlers:
            self._node(h, scope)
        self.alternative = saved
        self._body(node.orelse, scope)
        self._body(node.finalbody, scope)

    _v_TryStar = _v_Try

    def _v_ExceptHandler(self, node, scope):
        if node.type is not None:
            self._node(node.type, scope)
        if node.name:
            self._bind_other(node.name, scope)
        self._body(node.body, scope)

    def _v_If(self, node, scope):
        self._node(node.test, scope)
        self._body(node.body, scope)
        saved, self.alternative = self.alternative, True
        self._body(node.orelse, scope)
        self.alternative = saved

    def _v_MatchAs(self, node, scope):
        if node.name:
            self._bind_other(node.name, scope)
        self._children(node, scope)

    def _v_MatchStar(self, node, scope):
        if node.name:
            self._bind_other(node.name, scope)

    def _v_MatchMapping(self, node, scope):
        if node.rest:
            self._bind_other(node.rest, scope)
        self._children(node, scope)

    # -- imports --
    def _v_Import(self, node, scope):
        for a in node.names:
            if not _aliased(a.name):
                self._bind_other((a.asname or a.name).split(".")[0], scope)
                continue
            if a.asname:
                self._bind(a.asname, scope, _Binding(_end(node), self.alternative, a.name))
            else:
                top = a.name.split(".")[0]
                self._bind(top, scope, _Binding(_end(node), self.alternative, top))
            self._use(a.name, getattr(a, "lineno", node.lineno), f"import {a.name}")

    def _v_ImportFrom(self, node, scope):
        module = node.module
        if node.level or not _aliased(module):
            for a in node.names:
                if a.name == "*":
                    self.other_stars = True
                else:
                    self._bind_other(a.asname or a.name, scope)
            return
        for a in node.names:
            line = getattr(a, "lineno", node.lineno)
            if a.name == "*":
                if not self.collecting:
                    self.stars.append((module, _pos(node)))
                    self._use(f"{module}.*", line, f"from {module} import *")
                continue
            symbol = f"{module}.{a.name}"
            self._bind(a.asname or a.name, scope, _Binding(_end(node), self.alternative, symbol))
            self._use(symbol, line, f"from {module} import {a.name}")

    # -- assignments: `name = <chain>` follows the chain --
    def _v_Assign(self, node, scope):
        chain = _chain(node.value)
        for t in node.targets:
            if chain is not None and isinstance(t, ast.Name):
                self._bind(t.id, scope, _Binding(_end(node), self.alternative, None, chain,
                                                 scope))
            else:
                self._node(t, scope)
        self._node(node.value, scope)

    def _v_AnnAssign(self, node, scope):
        self._node(node.annotation, scope)
        chain = _chain(node.value) if node.value is not None else None
        if chain is not None and isinstance(node.target, ast.Name):
            self._bind(node.target.id, scope, _Binding(_end(node), self.alternative, None,
                                                       chain, scope))
        else:
            self._node(node.target, scope)
        if node.value is not None:
            self._node(node.value, scope)

    # -- uses --
    def _v_Name(self, node, scope):
        if not isinstance(node.ctx, ast.Load):
            self._bind_other(node.id, scope)
            return
        if self.collecting:
            return
        found = self._lookup(node.id, scope, _pos(node))
        if found is _FREE:
            self.free.append((node.id, node))
        elif found is not None:
            self._use(found, node.lineno, node.id)

    def _v_Attribute(self, node, scope):
        chain = _chain(node) if isinstance(node.ctx, ast.Load) else None
        if chain is None:
            self._children(node, scope)
            return
        if self.collecting:
            return
        base, attrs = chain
        found = self._lookup(base.id, scope, _pos(base))
        if found is _FREE:
            self.free.append((base.id, base, attrs, node))
        elif found is not None:
            self._use(".".join([found, *attrs]), node.lineno, ast.unparse(node))

    def _use(self, symbol: str, line: int, as_written: str, failure=None):
        if self.collecting:
            return
        use = self.uses.get(symbol)
        if use is None:
            use = self.uses[symbol] = _Use(as_written=as_written)
        use.lines.add(line)
        if failure is not None and use.failure is None:
            use.failure = failure

    # -- name lookup --
    def _lookup(self, name: str, scope: _Scope, pos: tuple):
        """The symbol ``name`` is bound to where it is used, None when it is bound to
        something else, _FREE when nothing binds it."""
        start = scope  # a comprehension runs where it stands: its use positions count there
        while start.kind == "comprehension":
            start = start.parent
        s, skip_class = scope, False
        while s is not None:
            if skip_class and s.kind == "class":
                s = s.parent
                continue
            if name in s.globals and s is not self.module:
                s = self.module
                continue
            if name in s.nonlocals:
                s, skip_class = s.parent, True
                continue
            if name in s.bindings:
                return self._from_bindings(s.bindings[name], pos if s is start else None)
            if name in s.others:
                return None
            s, skip_class = s.parent, True
        return _FREE

    def _from_bindings(self, bindings: list, pos):
        """The binding in effect: in the scope of the use, the last one before it (a fallback
        only when nothing else is); from an inner scope, the last that is not a fallback."""
        if pos is not None:
            before = [b for b in bindings if b.pos <= pos]
            candidates = [b for b in before if not b.alternative] or before
            binding = candidates[-1] if candidates else bindings[0]
        else:
            candidates = [b for b in bindings if not b.alternative] or bindings
            binding = candidates[-1]
        if binding.symbol is not None:
            return binding.symbol
        if id(binding) in self.resolving:  # `a = b` / `b = a`
            return None
        self.resolving.add(id(binding))
        try:
            base, attrs = binding.chain
            found = self._lookup(base.id, binding.scope, _pos(base))
        finally:
            self.resolving.discard(id(binding))
        if found is None or found is _FREE:
            return None
        return ".".join([found, *attrs])

    # -- names from `from aliased import *` --
    def _resolve_free(self):
        if not self.stars:
            return
        ignore = set(dir(builtins)) | _IPYTHON_NAMES | {"__file__", "__name__", "__doc__"}
        for name, base, *rest in self.free:
            if name in ignore:
                continue
            attrs, node = (rest[0], rest[1]) if rest else ([], base)
            module = self._star_module_for(name)
            if module is None:
                continue
            symbol = ".".join([f"{module}.{name}", *attrs])
            failure = None
            if name not in (_star_names(module) or ()):
                failure = (f"{module}.*", f"{name} would come from `from {module} import *`, "
                           f"which binds no {name} under ipu_gpu's aliases")
            self._use(symbol, node.lineno, ast.unparse(node), failure)

    def _star_module_for(self, name: str):
        """The aliased module a free ``name`` comes from: the last star import that binds
        it; else the only aliased star import when no other star import could bind it."""
        for module, _ in reversed(self.stars):
            if name in (_star_names(module) or ()):
                return module
        if self.other_stars:
            return None
        return self.stars[-1][0]
