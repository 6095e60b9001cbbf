"""``tf.compat.v1``, and what ``import tensorflow`` shows a program written for Graphcore's
TF 1.15 build: the TF1 names. Today these are the names TF1 shares with the eager core and
the behaviour switches; a name ipu_gpu does not emulate raises AttributeError naming it."""

import sys as _sys
import types as _types

import ipu_gpu as _core

from ...ops.nn import xw_plus_b as _xw_plus_b
from ..behavior import (disable_eager_execution, disable_v2_behavior,  # noqa: F401
                        enable_eager_execution, enable_v2_behavior)

_SHARED = [n for n in _core.__all__ if n not in ("backend_name", "set_backend", "BackendError",
                                                  "UnconnectedGradients")]
globals().update({n: getattr(_core, n) for n in _SHARED})

__all__ = sorted(_SHARED + ["disable_eager_execution", "disable_v2_behavior",
                            "enable_eager_execution", "enable_v2_behavior"])

# tf.compat.v1.nn: TF2's tf.nn plus the TF1-only names
nn = _types.ModuleType(f"{__name__}.nn", "``tf.compat.v1.nn``: TF2's ``tf.nn`` plus TF1's "
                       "``xw_plus_b``.")
nn.__dict__.update({n: getattr(_core.nn, n) for n in _core.nn.__all__})
nn.xw_plus_b = _xw_plus_b
nn.__all__ = sorted([*_core.nn.__all__, "xw_plus_b"])
_sys.modules[nn.__name__] = nn

# tf.compat.v1.image: TF2's tf.image plus TF1's resize_images/resize_bilinear/... (issue 17)
from ...image import v1 as image  # noqa: E402

_sys.modules[f"{__name__}.image"] = image

# ---- graph mode (ipu_gpu.graph): Graph, Session, placeholders, graph variables ------------
from ... import graph as _graph  # noqa: E402


class _VariableMeta(type):
    def __call__(cls, initial_value=None, trainable=True, collections=None,
                 validate_shape=True, caching_device=None, name=None, variable_def=None,
                 dtype=None, expected_shape=None, import_scope=None, constraint=None,
                 use_resource=None, synchronization=None, aggregation=None, shape=None):
        return _graph.make_variable(initial_value, trainable=trainable, name=name, dtype=dtype,
                                    collections=collections)

    def __instancecheck__(cls, obj):
        return isinstance(obj, (_core.Variable, _graph.GraphVariable))


class Variable(metaclass=_VariableMeta):
    """``tf.compat.v1.Variable``: a graph variable inside ``with tf.Graph().as_default():`` (or
    with a graph tensor as its initial value), initialized by ``sess.run(v.initializer)`` or
    ``global_variables_initializer()``; elsewhere an eager Variable. Either way it joins the
    default graph's ``global_variables`` (and ``trainable_variables``)."""


_GRAPH_NAMES = ["Graph", "InteractiveSession", "Session", "control_dependencies",
                "get_default_graph", "gradients",
                "global_variables", "global_variables_initializer", "group", "no_op",
                "placeholder", "placeholder_with_default", "reset_default_graph",
                "trainable_variables", "variables_initializer"]
globals().update({n: getattr(_graph, n) for n in _GRAPH_NAMES})
cond, while_loop = _graph.program.cond, _graph.program.while_loop
initialize_all_variables = _graph.global_variables_initializer

# tf.compat.v1.train: TF2's tf.train plus the TF1 optimizers
train = _types.ModuleType(f"{__name__}.train", "``tf.compat.v1.train``: TF2's ``tf.train`` "
                          "plus TF1's graph-mode optimizers.")
train.__dict__.update({n: getattr(_core.train, n) for n in getattr(
    _core.train, "__all__", [n for n in dir(_core.train) if not n.startswith("_")])})
for _name in ("AdagradOptimizer", "AdamOptimizer", "GradientDescentOptimizer",
              "MomentumOptimizer", "RMSPropOptimizer"):
    setattr(train, _name, getattr(_graph, _name))
from ...graph import optimizers as _graph_optimizers  # noqa: E402

for _name in ("exponential_decay", "get_global_step", "get_or_create_global_step",
              "piecewise_constant"):
    setattr(train, _name, getattr(_graph_optimizers, _name))
from ...graph import saver as _saver  # noqa: E402

train.Saver, train.latest_checkpoint = _saver.Saver, _saver.latest_checkpoint
from ...graph.optimizer_base import Optimizer as _Optimizer  # noqa: E402

train.Optimizer = _Optimizer
_sys.modules[train.__name__] = train

__all__ = sorted({*__all__, *_GRAPH_NAMES, "Variable", "cond", "initialize_all_variables",
                   "train", "while_loop"})

# ---- variable scopes, get_variable, the *_initializer factories, tf.layers -----------------
from . import variable_scope as _vs  # noqa: E402

_SCOPE_NAMES = ["AUTO_REUSE", "constant_initializer", "get_local_variable", "get_variable",
                "get_variable_scope",
                "glorot_normal_initializer", "glorot_uniform_initializer", "ones_initializer",
                "random_normal_initializer", "random_uniform_initializer",
                "truncated_normal_initializer", "variable_scope",
                "variance_scaling_initializer", "zeros_initializer"]
globals().update({n: getattr(_vs, n) for n in _SCOPE_NAMES})
from . import partitioned_variables as _pv  # noqa: E402

_PARTITION_NAMES = ["fixed_size_partitioner", "min_max_variable_partitioner",
                    "variable_axis_size_partitioner"]
globals().update({n: getattr(_pv, n) for n in _PARTITION_NAMES})
_SCOPE_NAMES += _PARTITION_NAMES

layers = _types.ModuleType(f"{__name__}.layers", "``tf.compat.v1.layers``: dense, conv2d, "
                           "pooling, batch_normalization, flatten, dropout on get_variable.")
layers.dense, layers.flatten, layers.dropout = _vs.dense, _vs.flatten, _vs.dropout
from . import tf_layers as _tf_layers  # noqa: E402

layers.__dict__.update({n: getattr(_tf_layers, n) for n in _tf_layers.__all__})
from . import layer_classes as _layer_classes  # noqa: E402

layers.__dict__.update({n: getattr(_layer_classes, n) for n in _layer_classes.__all__})
layers.__all__ = sorted(["dense", "dropout", "flatten", *_tf_layers.__all__,
                         *_layer_classes.__all__])
_sys.modules[layers.__name__] = layers

from . import losses, metrics  # noqa: E402,F401  (tf.compat.v1.losses and .metrics)


def local_variables(scope=None) -> list:
    """The default graph's local variables (``tf.metrics`` state)."""
    return _graph.get_default_graph().get_collection(metrics.LOCAL_VARIABLES, scope)


def local_variables_initializer():
    """One operation initializing every local variable."""
    return _graph.variables_initializer(local_variables(), name="init_local")


# TF1's tf.summary (protocol buffers, FileWriter) replaces the TF2 module of the shared names
from .summary import HistogramProto, Summary  # noqa: E402,F401

summary = _sys.modules[f"{__name__}.summary"]
from . import contrib  # noqa: E402,F401  (tf.contrib.layers' initializers, regularizers)
from . import graph_collections as _collections  # noqa: E402
from . import session_config as _session_config  # noqa: E402

_CONFIG_NAMES = [*_collections.__all__, *_session_config.__all__]
globals().update({n: getattr(_collections, n) for n in _collections.__all__})
globals().update({n: getattr(_session_config, n) for n in _session_config.__all__})
_CONFIG_NAMES.append("contrib")
from . import tf1_misc as _misc  # noqa: E402

globals().update({n: getattr(_misc, n) for n in _misc.__all__})
_sys.modules[f"{__name__}.logging"] = _misc.logging
__all__ = sorted({*__all__, *_SCOPE_NAMES, *_misc.__all__, *_CONFIG_NAMES, "HistogramProto",
                  "Summary", "layers",
                  "local_variables", "local_variables_initializer", "losses", "metrics",
                  "summary"})

# ---- tf.case, tf.Assert in graphs, TF1's initializers and decays, TF1's older names --------
from . import control_flow as _control_flow  # noqa: E402
from . import init_ops as _init_ops  # noqa: E402
from . import learning_rate_decay as _decay  # noqa: E402
from . import tf1_aliases as _aliases  # noqa: E402

Assert, case = _control_flow.Assert, _control_flow.case
initializers = _init_ops.initializers
_init_ops._install_variable_ops(initializers)
orthogonal_initializer = _init_ops.orthogonal_initializer
uniform_unit_scaling_initializer = _init_ops.uniform_unit_scaling_initializer
tables_initializer = _init_ops.tables_initializer
globals().update({n: getattr(_aliases, n) for n in _aliases.__all__})
Operation = _graph.Operation
for _name in _decay.__all__:
    setattr(train, _name, getattr(_decay, _name))
for _name in _aliases.TRAIN_NAMES:
    setattr(train, _name, getattr(_aliases, _name))
for _name in ("CheckpointState", "checkpoint_exists", "get_checkpoint_state"):
    setattr(train, _name, getattr(_saver, _name))
from .moving_averages import ExponentialMovingAverage as _EMA  # noqa: E402

train.ExponentialMovingAverage = _EMA
nn.softmax_cross_entropy_with_logits_v2 = _core.nn.softmax_cross_entropy_with_logits
if not hasattr(nn, "batch_normalization"):
    nn.batch_normalization = _aliases.batch_normalization
nn.dropout = _aliases.dropout  # TF 1's keep_prob (second positional argument)
from ...ops.pool_nd import pool_v1 as _pool_v1  # noqa: E402

nn.pool = _pool_v1  # TF 1's argument order (padding required, dilation_rate)
from . import tf1_signatures as _signatures  # noqa: E402  (TF 1's argument names)

globals().update({n: getattr(_signatures, n) for n in _signatures.__all__})
for _name in _signatures.NN_NAMES:
    setattr(nn, _name, getattr(_signatures, _name))
__all__ = sorted({*__all__, *_aliases.__all__, "Assert", "Operation", "case", "initializers",
                  "orthogonal_initializer", "tables_initializer",
                  "uniform_unit_scaling_initializer"})

from ...graph import checkpoint_reader as _checkpoint_reader  # noqa: E402
from ...graph import optimizers_more as _optimizers_more  # noqa: E402

for _name in ("NewCheckpointReader", "list_variables", "load_checkpoint", "load_variable"):
    setattr(train, _name, getattr(_checkpoint_reader, _name))
from ...estimator import hooks as _hooks  # noqa: E402  (tf.train's session-run hooks)

for _name in ("CheckpointSaverHook", "CheckpointSaverListener", "LoggingTensorHook",
              "NanLossDuringTrainingError", "NanTensorHook", "SecondOrStepTimer",
              "SessionRunArgs", "SessionRunContext", "SessionRunHook", "SessionRunValues",
              "StepCounterHook", "StopAtStepHook", "SummarySaverHook"):
    setattr(train, _name, getattr(_hooks, _name))
from ...estimator import monitored as _monitored  # noqa: E402  (tf.train's monitored sessions)

for _name in ("ChiefSessionCreator", "Coordinator", "MonitoredSession",
              "MonitoredTrainingSession", "Scaffold", "SessionCreator",
              "SingularMonitoredSession", "WorkerSessionCreator"):
    setattr(train, _name, getattr(_monitored, _name))

for _name in _optimizers_more.__all__:
    setattr(train, _name, getattr(_optimizers_more, _name))
from . import templates as _templates  # noqa: E402

make_template = _templates.make_template
report_uninitialized_variables = _templates.report_uninitialized_variables
from . import app, flags  # noqa: E402,F401  (tf.app.run, tf.app.flags / tf.flags)
from .fused_batch_norm import fused_batch_norm as _fused_batch_norm  # noqa: E402

__all__ = sorted({*__all__, "app", "flags", "make_template", "report_uninitialized_variables"})

nn.fused_batch_norm = _fused_batch_norm
nn.__all__ = sorted({*nn.__all__, "fused_batch_norm"})

# tf.math functions TF 1 also exports at the top level (TF 2 keeps them in tf.math only)
_TF1_TOP_MATH = ("ceil", "cumprod", "digamma", "erf", "erfc", "expm1", "is_finite", "is_inf",
                 "is_nan", "lgamma", "log1p", "reciprocal", "segment_sum",
                 "unsorted_segment_sum", "unsorted_segment_max", "unsorted_segment_min",
                 "unsorted_segment_prod")
globals().update({n: getattr(_core.math, n) for n in _TF1_TOP_MATH})
__all__ = sorted({*__all__, *_TF1_TOP_MATH})
# TF 1's names for the diagonal ops: tf.diag/diag_part are the tensor forms (not batched)
_TF1_DIAG = {"diag": _core.linalg.tensor_diag, "diag_part": _core.linalg.tensor_diag_part,
             "matrix_band_part": _core.linalg.band_part, "matrix_diag": _core.linalg.diag,
             "matrix_diag_part": _core.linalg.diag_part}
globals().update(_TF1_DIAG)
__all__ = sorted({*__all__, *_TF1_DIAG})

# ---- name= of the op functions names their graph node, as TF 1.15 (op_names.py) -------------
from . import op_names as _op_names  # noqa: E402

_op_names.install(globals(), skip={
    "Print", "add_to_collection", "case", "cond", "constant", "get_local_variable",
    "get_variable", "gradients", "group", "identity", "name_scope", "no_op", "placeholder",
    "placeholder_with_default", "py_func", "tables_initializer", "variables_initializer",
    "while_loop"})
_op_names.install(nn)

# tf.GradientTape in a TF1 graph gives tf.gradients's nodes (graph_tape.py)
from . import graph_tape as _graph_tape  # noqa: E402

GradientTape = _graph_tape.GradientTape

# tf.compat.v1.saved_model: TF 1's builder, loader and simple_save beside TF 2's save (issue 17)
import importlib as _importlib  # noqa: E402  (the name is bound to TF 2's module above)

saved_model = _importlib.import_module(f"{__name__}.saved_model")

from ...strings import string_split_v1 as string_split  # noqa: E402,F401  (issue 17)

__all__ = sorted({*__all__, "string_split"})

# TF 1.15 also has TF 2's get_logger and the tf.dtypes namespace (portability sweep)
from ... import dtypes  # noqa: E402,F401
from ...tf2_names import get_logger  # noqa: E402,F401
from ...io import gfile_v1 as gfile  # noqa: E402,F401  (TF 1's tf.gfile)
from ...tf2_names import get_static_value  # noqa: E402,F401
from ...core.tape import UnconnectedGradients  # noqa: E402,F401  (TF 1.15 has it too)

from .io_names import (FixedLenFeature, FixedLenSequenceFeature, VarLenFeature,  # noqa: E402,F401
                       decode_raw, parse_example, parse_single_example, python_io,
                       sparse_tensor_to_dense)

__all__ = sorted({*__all__, "dtypes", "get_logger", "gfile", "get_static_value",
                  "UnconnectedGradients", "FixedLenFeature", "FixedLenSequenceFeature",
                  "VarLenFeature", "decode_raw", "parse_example", "parse_single_example",
                  "python_io", "sparse_tensor_to_dense"})
