"""Import aliases: a program's ``import tensorflow``, ``from tensorflow.python import ipu``,
``import keras``, ``import poptorch``, ... load ipu_gpu's modules, so the program file is
never edited.

A meta-path finder answers for the top-level names in ``TOP_LEVELS``. Each alias module is an
``AliasModule`` whose attributes come from its ipu_gpu target; an attribute or submodule that
ipu_gpu does not provide raises AttributeError / ImportError naming the exact TensorFlow,
Keras or PopTorch symbol ("ipu_gpu does not emulate tensorflow.Session") at the point of
use, never a placeholder. ``resolve`` answers the same question without importing anything
into the program's namespace: ``ipu-gpu check`` uses it, so ``check`` and ``run`` agree.

What ``import tensorflow`` shows depends on the TensorFlow the program is written for: the
TF2 core (``ipu_gpu``) or the TF1 names (``ipu_gpu.compat.v1``, Graphcore's TF 1.15 build).
The choice, in order: ``install(tf_version=...)`` (``ipu-gpu run --tf1/--tf2``); else the
program's own switches at run time (``disable_v2_behavior()``, ``disable_eager_execution()``:
``ipu_gpu.compat.behavior``); else ``detect_tf_version`` of the program's source, which
``ipu-gpu run`` calls before the program starts; else TF2.

Nothing is aliased until ``install()``: a process that imports the real TensorFlow or PyTorch
keeps them. ``install`` moves real modules of the aliased names out of ``sys.modules`` (and
``uninstall`` puts them back), is idempotent and thread-safe.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types
from dataclasses import dataclass

from .compat import behavior

TOP_LEVELS = ("tensorflow", "keras", "ipu_tensorflow_addons", "poptorch", "popdist")
NAMESPACE = None  # target of an alias that only holds aliased submodules


@dataclass(frozen=True)
class Alias:
    """An aliased module: its ipu_gpu ``target`` (a module name, or NAMESPACE), whether its
    submodules map onto the target's (``recursive``), and, for TensorFlow internals, the only
    ``names`` programs may take from it (None: every public name of the target)."""

    target: str | None
    recursive: bool = False
    names: tuple | None = None


_DTYPE_NAMES = ("as_dtype", "bool", "double", "float16", "float32", "float64", "half", "int8",
                "int16", "int32", "int64", "uint8")

TABLE: dict[str, Alias] = {
    # TensorFlow; "tensorflow" itself is chosen by the TensorFlow version (see _root_target)
    "tensorflow": Alias("ipu_gpu"),
    "tensorflow.compat": Alias("ipu_gpu.compat.text"),  # as_bytes, as_text, ...; v1, v2 below
    "tensorflow.compat.v1": Alias("ipu_gpu.compat.v1"),
    "tensorflow.compat.v1.keras": Alias("ipu_gpu.keras", recursive=True),
    "tensorflow.compat.v2": Alias("ipu_gpu"),
    "tensorflow.nn": Alias("ipu_gpu.nn"),
    "tensorflow.math": Alias("ipu_gpu.math"),
    "tensorflow.errors": Alias("ipu_gpu.errors"),
    "tensorflow.data": Alias("ipu_gpu.data", recursive=True),
    "tensorflow.io": Alias("ipu_gpu.io", recursive=True),
    "tensorflow.random": Alias("ipu_gpu.random", recursive=True),
    "tensorflow.train": Alias("ipu_gpu.train"),
    "tensorflow.distribute": Alias("ipu_gpu.distribute"),
    "tensorflow.config": Alias("ipu_gpu.tf_config"),
    "tensorflow.debugging": Alias("ipu_gpu.debugging"),
    "tensorflow.summary": Alias("ipu_gpu.summary"),
    "tensorflow.linalg": Alias("ipu_gpu.linalg"),
    "tensorflow.sparse": Alias("ipu_gpu.sparse"),
    "tensorflow.keras": Alias("ipu_gpu.keras", recursive=True),
    "tensorflow.optimizers": Alias("ipu_gpu.keras.optimizers", recursive=True),
    "tensorflow.python": Alias(NAMESPACE),
    "tensorflow.python.ipu": Alias("ipu_gpu.ipu", recursive=True),
    "tensorflow.python.keras": Alias("ipu_gpu.keras", recursive=True),
    "tensorflow.python.framework": Alias(NAMESPACE),
    "tensorflow.python.framework.errors": Alias("ipu_gpu.errors"),
    "tensorflow.python.framework.errors_impl": Alias("ipu_gpu.errors"),
    "tensorflow.python.framework.dtypes": Alias("ipu_gpu", names=_DTYPE_NAMES),
    "tensorflow.python.framework.ops": Alias("ipu_gpu.compat.framework_ops"),
    "tensorflow.python.framework.constant_op": Alias("ipu_gpu", names=("constant",)),
    "tensorflow.python.framework.tensor_shape": Alias(
        "ipu_gpu.core.spec", names=("Dimension", "TensorShape", "unknown_shape")),
    "tensorflow.python.framework.tensor_spec": Alias("ipu_gpu.core.spec", names=("TensorSpec",)),
    "tensorflow.python.ops": Alias(NAMESPACE),
    "tensorflow.python.ops.nn": Alias("ipu_gpu.nn"),
    "tensorflow.python.ops.nn_ops": Alias("ipu_gpu.nn"),
    "tensorflow.python.ops.math_ops": Alias("ipu_gpu", names=(
        "abs", "add", "argmax", "argmin", "cast", "divide", "equal", "exp", "floordiv",
        "floormod", "greater", "greater_equal", "less", "less_equal", "log", "logical_and",
        "logical_not", "logical_or", "matmul", "maximum", "minimum", "multiply", "negative",
        "not_equal", "pow", "range", "reduce_max", "reduce_mean", "reduce_min", "reduce_sum",
        "rsqrt", "sigmoid", "sign", "sqrt", "square", "subtract", "tanh", "truediv")),
    "tensorflow.python.ops.array_ops": Alias("ipu_gpu", names=(
        "concat", "expand_dims", "fill", "gather", "identity", "one_hot", "ones", "ones_like",
        "reshape", "split", "squeeze", "stack", "stop_gradient", "transpose", "where", "zeros",
        "zeros_like")),
    # TF 1.15 / 2.6 internals whose names are TF1's (ops.cond is tf.compat.v1.cond, ...)
    "tensorflow.python.ops.control_flow_ops": Alias("ipu_gpu.compat.v1", names=(
        "Assert", "case", "cond", "group", "no_op", "while_loop")),
    "tensorflow.python.ops.init_ops": Alias("ipu_gpu.compat.v1", names=(
        "constant_initializer", "glorot_normal_initializer", "glorot_uniform_initializer",
        "ones_initializer", "orthogonal_initializer", "random_normal_initializer",
        "random_uniform_initializer", "truncated_normal_initializer",
        "variance_scaling_initializer", "zeros_initializer")),
    "tensorflow.python.ops.linalg_ops": Alias("ipu_gpu.compat.v1", names=("norm",)),
    "tensorflow.python.ops.variable_scope": Alias("ipu_gpu.compat.v1", names=(
        "AUTO_REUSE", "get_variable", "get_variable_scope", "variable_scope")),
    "tensorflow.python.distribute.distribution_strategy_context": Alias(
        "ipu_gpu.distribute", names=("experimental_set_strategy", "get_replica_context",
                                     "get_strategy", "has_strategy", "in_cross_replica_context")),
    # TF 1.15's checkpoint reader (``pywrap_tensorflow.NewCheckpointReader(prefix)``)
    "tensorflow.pywrap_tensorflow": Alias("ipu_gpu.graph.checkpoint_reader",
                                          names=("NewCheckpointReader",)),
    "tensorflow.python.pywrap_tensorflow": Alias("ipu_gpu.graph.checkpoint_reader",
                                                 names=("NewCheckpointReader",)),
    # TF 1.15's tf.contrib, importable (``import tensorflow.contrib.compiler.xla``) in TF1 only
    "tensorflow.contrib": Alias("ipu_gpu.compat.v1.contrib", recursive=True),
    "tensorflow.python.data": Alias(NAMESPACE),
    "tensorflow.python.data.ops": Alias(NAMESPACE),
    "tensorflow.python.data.ops.dataset_ops": Alias("ipu_gpu.data", names=("Dataset",)),
    "tensorflow.python.saved_model": Alias("ipu_gpu.compat.v1.saved_model", recursive=True),
    "tensorflow.python.training": Alias(NAMESPACE),
    "tensorflow.python.distribute": Alias(NAMESPACE),
    "tensorflow.python.distribute.reduce_util": Alias("ipu_gpu.distribute", names=("ReduceOp",)),
    "tensorflow.python.training.optimizer": Alias("ipu_gpu.compat.v1.train",
                                                  names=("Optimizer",)),
    # Keras (Graphcore's Keras fork and tf.keras are one package here)
    "keras": Alias("ipu_gpu.keras", recursive=True),
    # Graphcore's other packages, each filled by its own room
    "ipu_tensorflow_addons": Alias("ipu_gpu.addons", recursive=True),
    "poptorch": Alias("ipu_gpu.poptorch", recursive=True),
    "popdist": Alias("ipu_gpu.popdist", recursive=True),
}


# Submodules whose TF1 form differs (TF 1.15's tf.train has the graph optimizers, tf.summary
# the protocol-buffer summaries and FileWriter, tf.nn xw_plus_b): under TF1 they show these.
TF1_SUBMODULES = {"tensorflow.train": "ipu_gpu.compat.v1.train",
                  "tensorflow.summary": "ipu_gpu.compat.v1.summary",
                  "tensorflow.nn": "ipu_gpu.compat.v1.nn"}

# Modules only TF 1.15 has: a TF2 program cannot import them.
TF1_ONLY = frozenset({"tensorflow.contrib"})

# The releases Graphcore's SDK 3.x ships, which programs may test (`tf.__version__[0]`).
EMULATED_VERSIONS = {"tensorflow": ("1.15.5", "2.6.3"), "keras": ("2.6.0", "2.6.0")}


def _emulated_version(top: str) -> str:
    v1, v2 = EMULATED_VERSIONS[top]
    return v1 if _tf_version() == 1 else v2


class NotEmulatedError(ImportError):
    """An aliased module ipu_gpu does not provide."""


def _not_emulated(symbol: str) -> str:
    return (f"ipu_gpu does not emulate {symbol} (`ipu-gpu check PROGRAM.py` lists what a "
            f"program uses that ipu_gpu lacks)")


# ---- resolution ---------------------------------------------------------------------------------
def _root_target() -> str:
    return "ipu_gpu.compat.v1" if _tf_version() == 1 else "ipu_gpu"


def _tf_version() -> int:
    forced = _state.forced_version
    if forced is not None:
        return forced
    return behavior.tf_version() or 2


def alias_for(name: str) -> Alias | None:
    """The Alias of module ``name`` (``tensorflow.python.ipu.config``, ...), or None when
    ipu_gpu does not provide that module."""
    entry = TABLE.get(name)
    if any(name == m or name.startswith(m + ".") for m in TF1_ONLY) and _tf_version() != 1:
        return None
    if entry is not None:
        if name == "tensorflow":
            return Alias(_root_target())
        if name in TF1_SUBMODULES and _tf_version() == 1:
            return Alias(TF1_SUBMODULES[name])
        return entry if _target_exists(entry.target) else None
    parent, _, leaf = name.rpartition(".")
    while parent:
        entry = TABLE.get(parent)
        if entry is not None:
            if not entry.recursive or entry.target is NAMESPACE:
                return None
            target = f"{entry.target}.{name[len(parent) + 1:]}"
            return Alias(target, recursive=True) if _target_exists(target) else None
        parent, _, leaf = parent.rpartition(".")
    return None


def _target_exists(target: str | None) -> bool:
    if target is NAMESPACE:
        return True
    if target in sys.modules:
        return True
    try:
        return importlib.util.find_spec(target) is not None
    except (ImportError, ValueError):  # a parent package is missing
        return False


def _submodule_names(name: str) -> list:
    """The aliased modules directly under ``name`` that the table lists."""
    prefix = name + "."
    return sorted({k[len(prefix):].split(".")[0] for k in TABLE if k.startswith(prefix)})


def _public_names(alias: Alias, target_module) -> list:
    if alias.names is not None:
        return list(alias.names)
    if target_module is None:
        return []
    names = getattr(target_module, "__all__", None)
    if names is None:
        names = [n for n in vars(target_module) if not n.startswith("_")]
    return list(names)


def _lookup(module_name: str, alias: Alias, attr: str):
    """(found, value) for ``module_name.attr`` where module_name is aliased by ``alias``."""
    full = f"{module_name}.{attr}"
    if alias_for(full) is not None:
        return True, _import_alias(full)
    if alias.target is NAMESPACE or (alias.names is not None and attr not in alias.names):
        return False, None
    target_module = importlib.import_module(alias.target)
    try:
        value = getattr(target_module, attr)
    except AttributeError:
        return False, None
    if alias.names is None and attr.startswith("_"):
        return True, value
    if isinstance(value, types.ModuleType) and value.__name__.startswith("ipu_gpu"):
        return True, _wrap_module(full, value)
    return True, value


def resolve(symbol: str) -> tuple:
    """``(True, object)`` when ipu_gpu provides the dotted ``symbol`` (a module, or a name
    reached from one: ``tensorflow.python.ipu.ipu_compiler.compile``), else ``(False,
    reason)``. Reads the same table the import hook uses; installs nothing."""
    parts = symbol.split(".")
    if parts[0] not in TOP_LEVELS:
        return False, f"{parts[0]} is not an aliased package"
    for i in range(len(parts), 0, -1):  # the longest aliased module prefix
        module_name = ".".join(parts[:i])
        if alias_for(module_name) is None:
            continue
        obj = _import_alias(module_name)
        for attr in parts[i:]:
            try:
                obj = getattr(obj, attr)
            except AttributeError as e:
                return False, str(e)
        return True, obj
    return False, _not_emulated(".".join(parts[:1]))


# ---- modules ------------------------------------------------------------------------------------
class AliasModule(types.ModuleType):
    """A module a program imported under a TensorFlow/Keras/PopTorch name; attributes come
    from its ipu_gpu target (``__ipu_gpu_target__``)."""

    def __getattr__(self, attr):
        name = self.__name__
        if attr == "__version__" and name.partition(".")[0] in EMULATED_VERSIONS:
            return _emulated_version(name.partition(".")[0])
        alias = _fixed_alias(self) or alias_for(name)
        if attr == "__all__" and alias is not None and alias.target is not NAMESPACE:
            # what `from tensorflow... import *` binds: the target's public names
            return _public_names(alias, importlib.import_module(alias.target))
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        found, value = (False, None) if alias is None else _lookup(name, alias, attr)
        if not found:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}: "
                                 f"{_not_emulated(name + '.' + attr)}")
        self.__dict__[attr] = value  # later reads skip __getattr__
        if name == "tensorflow" or name in TF1_SUBMODULES:  # they follow the TF version
            _root_cached.add((name, attr))
        return value

    def __dir__(self):
        alias = _fixed_alias(self) or alias_for(self.__name__)
        target = None
        if alias is not None and alias.target is not NAMESPACE:
            target = importlib.import_module(alias.target)
        names = set(_public_names(alias, target)) if alias is not None else set()
        return sorted(names | set(_submodule_names(self.__name__)) | set(vars(self)))

    def __repr__(self):
        return f"<module {self.__name__!r} (ipu_gpu alias)>"


def _fixed_alias(module):
    return module.__dict__.get("__ipu_gpu_alias__")


def _new_alias_module(name: str, alias: Alias | None, fixed: bool) -> AliasModule:
    module = AliasModule(name)
    module.__path__ = []  # a package: submodules import through the finder
    module.__ipu_gpu_alias__ = alias if fixed else None
    module.__ipu_gpu_target__ = None if alias is None else alias.target
    return module


def _import_alias(name: str):
    module = sys.modules.get(name)
    if isinstance(module, AliasModule):
        return module
    if _state.installed:
        return importlib.import_module(name)
    # resolve() without the hook: a private module, not placed in sys.modules
    return _private_modules.setdefault(name, _new_alias_module(name, None, fixed=False))


def _wrap_module(name: str, target) -> AliasModule:
    """An ipu_gpu submodule reached as an attribute (``tf.compat.v1.nn``) under its alias
    name, so missing names in it are reported under that name too."""
    module = sys.modules.get(name) if _state.installed else _private_modules.get(name)
    if isinstance(module, AliasModule):
        return module
    module = _new_alias_module(name, Alias(target.__name__), fixed=True)
    (sys.modules if _state.installed else _private_modules)[name] = module
    return module


_private_modules: dict = {}
# (module, name) cached on the `tensorflow` alias and its TF1_SUBMODULES for the current
# TensorFlow version
_root_cached: set = set()


def _forget_root_names() -> None:
    """Drop the names the `tensorflow` alias and its versioned submodules cached: the
    TensorFlow version changed."""
    for module_name, attr in _root_cached:
        for module in (sys.modules.get(module_name), _private_modules.get(module_name)):
            if isinstance(module, AliasModule):
                module.__dict__.pop(attr, None)
    _root_cached.clear()


behavior.on_change(_forget_root_names)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers imports of the aliased top-level names."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] not in TOP_LEVELS:
            return None
        if alias_for(fullname) is None:
            # name=None keeps `from pkg import missing` from swallowing the message
            raise NotEmulatedError(_not_emulated(fullname))
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        return _new_alias_module(spec.name, None, fixed=False)

    def exec_module(self, module):
        name = module.__name__
        alias = alias_for(name)
        if alias is not None and alias.target is not NAMESPACE:
            importlib.import_module(alias.target)  # load (and register the ops) now


# ---- install / uninstall ---------------------------------------------------------------------
class _State:
    def __init__(self):
        self.lock = threading.RLock()
        self.installed = False
        self.finder = _Finder()
        self.stashed: dict = {}
        self.forced_version: int | None = None


_state = _State()


def _aliased(name: str) -> bool:
    return name.partition(".")[0] in TOP_LEVELS


def install(tf_version: int | None = None) -> None:
    """Alias TensorFlow, Keras, ipu_tensorflow_addons, PopTorch and popdist onto ipu_gpu for
    imports from now on. ``tf_version`` (1 or 2) forces what ``import tensorflow`` shows;
    None leaves it to the program's switches (TF2 unless it calls ``disable_v2_behavior``).
    Idempotent and thread-safe; real modules of those names already imported are set aside
    until ``uninstall``."""
    if tf_version not in (1, 2, None):
        raise ValueError(f"install: tf_version must be 1, 2 or None, got {tf_version!r}")
    with _state.lock:
        if tf_version != _state.forced_version:
            _state.forced_version = tf_version
            _forget_root_names()
        if _state.installed:
            return
        for name in [n for n in sys.modules if _aliased(n)]:
            module = sys.modules[name]
            if not isinstance(module, AliasModule):
                _state.stashed[name] = sys.modules.pop(name)
        sys.meta_path.insert(0, _state.finder)
        _state.installed = True
        _private_modules.clear()


def uninstall() -> None:
    """Remove the aliases: alias modules leave ``sys.modules`` and real modules set aside by
    ``install`` come back. Idempotent."""
    with _state.lock:
        if not _state.installed:
            return
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(_state.finder)
        for name in [n for n, m in sys.modules.items() if isinstance(m, AliasModule)]:
            del sys.modules[name]
        sys.modules.update(_state.stashed)
        _state.stashed.clear()
        _state.installed = False
        _state.forced_version = None
        _root_cached.clear()


def is_installed() -> bool:
    """Whether the aliases are installed."""
    return _state.installed


@contextlib.contextmanager
def installed(tf_version: int | None = None):
    """``install`` for the duration of a ``with`` block (then ``uninstall``)."""
    was = _state.installed
    install(tf_version)
    try:
        yield
    finally:
        if not was:
            uninstall()


# ---- TensorFlow version of a program ------------------------------------------------------------
# Names only TF1 has at the top level of `tensorflow` (Graphcore's TF 1.15 programs use them).
TF1_ONLY_NAMES = frozenset({
    "AUTO_REUSE", "ConfigProto", "GraphKeys", "InteractiveSession", "Session", "assign",
    "assign_add", "disable_eager_execution", "disable_v2_behavior", "get_collection",
    "get_default_graph", "get_variable", "global_variables", "global_variables_initializer",
    "layers", "local_variables_initializer", "logging", "placeholder", "reset_default_graph",
    "trainable_variables", "variable_scope", "contrib", "losses", "metrics", "to_float",
    "to_int32", "random_normal", "random_uniform", "truncated_normal", "log", "sparse_to_dense",
    "train.GradientDescentOptimizer", "train.MomentumOptimizer", "train.AdamOptimizer",
    "train.RMSPropOptimizer", "train.Saver", "train.Optimizer", "summary.FileWriter",
})


# Names of tf.compat.v1 that TF 2 runs only inside a graph the program builds itself.
_GRAPH_ONLY_NAMES = frozenset({"InteractiveSession", "Session", "placeholder"})


def _imports_tf1_only_module(node) -> bool:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
        names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    else:
        return False
    return any(n == m or n.startswith(m + ".") for n in names for m in TF1_ONLY)


def detect_tf_version(source: str) -> int | None:
    """1 when a program's source uses TensorFlow 1 (it calls ``disable_v2_behavior`` or
    ``disable_eager_execution``, takes a TF1-only name from a module bound to ``tensorflow``,
    or runs a ``Session``/``placeholder`` of a module bound to ``tensorflow.compat.v1``
    without building a graph of its own: under TF 2 that only works inside
    ``Graph().as_default()``, so such a program was written for TF 1.15, as Graphcore's TF1
    tutorials are), 2 when it imports ``tensorflow`` otherwise, None when it does not import
    ``tensorflow`` at all or cannot be parsed."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    bound = set()  # local names bound to the `tensorflow` module itself
    compat_v1 = set()  # local names bound to `tensorflow.compat.v1`
    imports_tf = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "tensorflow" or a.name.startswith("tensorflow."):
                    imports_tf = True
                if a.name == "tensorflow":
                    bound.add(a.asname or "tensorflow")
                if a.name.startswith("tensorflow.") and a.asname is None:
                    bound.add("tensorflow")
                if a.name == "tensorflow.compat.v1" and a.asname:
                    compat_v1.add(a.asname)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] == "tensorflow":
                imports_tf = True
            if node.module == "tensorflow.compat":
                compat_v1.update(a.asname or a.name for a in node.names if a.name == "v1")
    builds_graph = any(isinstance(n, ast.Attribute) and n.attr == "as_default"
                       for n in ast.walk(tree))
    for node in ast.walk(tree):
        if not builds_graph and isinstance(node, ast.Attribute) \
                and isinstance(node.value, ast.Name) and node.value.id in compat_v1 \
                and node.attr in _GRAPH_ONLY_NAMES:
            return 1
        if isinstance(node, ast.Attribute) and node.attr in ("disable_v2_behavior",
                                                             "disable_eager_execution"):
            return 1
        if _imports_tf1_only_module(node):  # import tensorflow.contrib...: TF 2 has none
            return 1
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in bound and node.attr in TF1_ONLY_NAMES:
            return 1
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                and isinstance(node.value.value, ast.Name) and node.value.value.id in bound \
                and f"{node.value.attr}.{node.attr}" in TF1_ONLY_NAMES:
            return 1
    return 2 if imports_tf else None
