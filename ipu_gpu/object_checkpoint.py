"""``tf.train.Checkpoint``: saving and restoring the variables of a graph of objects.

The objects are found as TF finds them, from the keyword arguments (and ``root``): a
variable is a leaf; a Sequential or functional Keras model has ``layer_with_weights-<i>``
children (its layers that have weights) and its compiled ``optimizer``; any other Keras
layer or model its public attributes (``kernel``, ``bias``, sublayers, ``optimizer``), then
weights no attribute holds by their base name; a Keras optimizer has ``iter`` and its hyperparameter
variables, and each slot of a tracked variable ``v`` is saved as
``<v's path>/.OPTIMIZER_SLOT/<optimizer's path>/<slot>`` (TF's keys); a ``tf.Module`` has its
attributes; lists and dicts their items; a nested ``Checkpoint`` its own children. Every
value is stored under ``<path>/.ATTRIBUTES/VARIABLE_VALUE``, TF's key, each variable once.

The file is the npz of ``graph/saver.py`` (``<prefix>.npz``), so ``tf.train.latest_checkpoint``
and ``tf.train.list_variables``/``load_variable`` read it; TF's ``.index``/``.data`` files
are not written. ``save`` numbers the prefix with ``save_counter`` and writes the
``checkpoint`` state file naming it (TF's ``Checkpoint.save``); ``write`` writes the prefix
as given.

Restoring assigns every tracked variable its saved value at once. An optimizer slot that
the checkpoint holds but the optimizer has not made yet is made then (TF makes slot
variables on restore when executing eagerly), so a restored optimizer continues as it was.
Values for Keras weights not made yet (a model not built) wait, as TF defers them: each
weight a Keras layer makes is assigned its value when the path to it exists (and its
optimizer slots are made then); the status object reports the state of that moment.
Variables made otherwise after ``restore`` (a plain ``tf.Variable`` added to a
``tf.Module``) are not waited for.
"""

from __future__ import annotations

import os
import weakref

import numpy as np

from . import errors

__all__ = ["Checkpoint"]

_VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"
_WAITING: weakref.WeakSet = weakref.WeakSet()  # restores with values for unmade variables
_SLOT = "/.OPTIMIZER_SLOT/"


def _not_trackable(name, value) -> ValueError:
    return ValueError(f"`Checkpoint` was expecting {name} to be a trackable object (an object "
                      f"derived from `Trackable`), got {value}. If you believe this object "
                      "should be trackable (i.e. it is part of the TensorFlow Python API and "
                      "manages state), please open an issue.")


def _kinds():
    from .core.tensor import Variable
    from .module import Module

    return Variable, Module


def _keras_kinds():
    import sys

    if "ipu_gpu.keras" not in sys.modules:  # no Keras object can exist yet
        return (), ()
    from .keras.engine.base_layer import Layer
    from .keras.optimizers.optimizer_v2 import OptimizerV2

    return Layer, OptimizerV2


def _is_trackable(value) -> bool:
    variable, module = _kinds()
    layer, optimizer = _keras_kinds()
    return isinstance(value, (variable, module, Checkpoint, list, tuple, dict)
                      + tuple(t for t in (layer, optimizer) if t))


def _base_name(var) -> str:
    return var.name.rsplit(":", 1)[0].rsplit("/", 1)[-1]


def _is_graph_model(obj) -> bool:
    from .keras.engine.sequential import Sequential

    return isinstance(obj, Sequential) or bool(getattr(obj, "_is_graph_network", False))


def _weights(layer) -> list:
    """A Keras layer's weights; none for a model not built yet (Keras raises there)."""
    try:
        return layer.weights
    except ValueError:
        return []


def _children(obj) -> list:
    """[(name, child)] of a trackable object, in TF's naming."""
    variable, module = _kinds()
    layer, optimizer = _keras_kinds()
    if isinstance(obj, Checkpoint):
        return list(obj._children.items())
    if isinstance(obj, (list, tuple)):
        return [(str(i), x) for i, x in enumerate(obj)]
    if isinstance(obj, dict):
        return [(str(k), v) for k, v in obj.items()]
    if optimizer and isinstance(obj, optimizer):
        out = [("iter", obj._iterations)] if obj._iterations is not None else []
        out += [(k, v) for k, v in sorted(obj._hyper.items()) if isinstance(v, variable)]
        return out
    if layer and isinstance(obj, layer):
        if _is_graph_model(obj):  # Sequential/functional: its layers by position
            with_weights = [sub for sub in obj.layers if _weights(sub)]
            out = [(f"layer_with_weights-{i}", sub) for i, sub in enumerate(with_weights)]
            opt = getattr(obj, "optimizer", None)
            if optimizer and isinstance(opt, optimizer):
                out.append(("optimizer", opt))
            return out
        # a layer or a subclassed model: its attributes (kernel, bias, sublayers,
        # optimizer), then any weight no attribute holds, by its base name
        out = [(k, v) for k, v in vars(obj).items()
               if not k.startswith("_") and _is_trackable(v)]
        held = {id(v) for _, v in out}
        names = {k for k, _ in out}
        for w in obj._trainable_weights + obj._non_trainable_weights:
            if id(w) not in held:
                name = _base_name(w)
                while name in names:
                    name += "_1"
                names.add(name)
                out.append((name, w))
        return out
    if isinstance(obj, module):
        return [(k, v) for k, v in sorted(vars(obj).items())
                if not k.startswith("_") and _is_trackable(v)]
    return []


def _walk(root) -> tuple:
    """({path: variable}, [(path, optimizer)]): every variable once (its first path, breadth
    first, as TF's object graph), and the Keras optimizers."""
    variable, _ = _kinds()
    _, optimizer = _keras_kinds()
    paths, optimizers, seen = {}, [], {id(root)}
    queue = [("", root)]
    while queue:
        prefix, obj = queue.pop(0)
        for name, child in _children(obj):
            if id(child) in seen:
                continue
            seen.add(id(child))
            path = f"{prefix}/{name}" if prefix else name
            if isinstance(child, variable):
                paths[path] = child
            else:
                if optimizer and isinstance(child, optimizer):
                    optimizers.append((path, child))
                queue.append((path, child))
    return paths, optimizers


def _values(root) -> dict:
    """{checkpoint key: numpy value} of everything ``root`` tracks."""
    paths, optimizers = _walk(root)
    out = {path + _VALUE: np.asarray(v.numpy()) for path, v in paths.items()}
    for key, weight in _slot_weights(paths, optimizers):
        out[key] = np.asarray(weight.numpy())
    return out


def _slot_weights(paths: dict, optimizers: list):
    """(checkpoint key, slot weight) of every optimizer slot of a tracked variable."""
    path_of = {id(v): path for path, v in paths.items()}
    for opt_path, opt in optimizers:
        for owner, slots in opt._slots.items():
            var_path = path_of.get(owner)
            if var_path is None:
                continue
            for slot, weight in slots.items():
                yield f"{var_path}{_SLOT}{opt_path}/{slot}{_VALUE}", weight


def variable_created() -> None:
    """A Keras weight was made: restores waiting for it assign it now (TF's deferred
    restoration)."""
    for checkpoint in list(_WAITING):
        checkpoint._assign_pending()


def _npz(prefix) -> str:
    prefix = os.fspath(prefix)
    return prefix if prefix.endswith(".npz") else prefix + ".npz"


class _Restore:
    """One ``restore``: the saved values not assigned yet and the variables assigned."""

    def __init__(self, saved):
        self.pending = dict(saved)
        self.bound: set = set()


class CheckpointLoadStatus:
    """What a ``restore`` matched (TF's status object), as of now: values waiting for Keras
    weights not built yet are assigned when the weights are made. The assertions raise
    ``AssertionError`` with TF's messages."""

    def __init__(self, checkpoint, state):
        self._checkpoint = checkpoint
        self._state = state

    def _unmatched(self) -> list:
        paths, _ = _walk(self._checkpoint)
        return [v for v in paths.values() if id(v) not in self._state.bound]

    def assert_consumed(self):
        """Every saved value was restored and every tracked variable got one."""
        self.assert_existing_objects_matched()
        if self._state.pending:
            raise AssertionError(f"Unresolved object in checkpoint: "
                                 f"{sorted(self._state.pending)[0]}")
        return self

    def assert_existing_objects_matched(self):
        """Every tracked variable got a saved value."""
        unmatched = self._unmatched()
        if unmatched:
            shown = unmatched[:10]
            raise AssertionError(
                f"Found {len(unmatched)} Python objects that were not bound to "
                f"checkpointed values, likely due to changes in the Python program. Showing "
                f"{len(shown)} of {len(unmatched)} unmatched objects: {shown}")
        return self

    def assert_nontrivial_match(self):
        """Some saved value was restored."""
        if not self._state.bound:
            raise AssertionError("Nothing except the root object matched a checkpointed "
                                 "value. Typically this means that the checkpoint does not "
                                 "match the Python program.")
        return self

    def expect_partial(self):
        """Silences the warnings about values not restored (none are printed here)."""
        return self

    def run_restore_ops(self, session=None):
        """Nothing to run: values were assigned by ``restore``."""

    def initialize_or_restore(self, session=None):
        """Nothing to run: values were assigned by ``restore``."""


class InitializationOnlyStatus(CheckpointLoadStatus):
    """``restore(None)``: nothing restored."""

    def __init__(self):
        super().__init__(None, _Restore({}))

    def _nothing(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being "
                             "restored.")

    def assert_consumed(self):
        self._nothing()

    def assert_existing_objects_matched(self):
        self._nothing()

    def assert_nontrivial_match(self):
        self._nothing()


class Checkpoint:
    """Manages saving/restoring trackable values to disk (``tf.train.Checkpoint(root=None,
    **kwargs)``): the keyword arguments (variables, Keras models, layers and optimizers,
    ``tf.Module``s, other Checkpoints, lists and dicts of them) are its dependencies.

    Raises:
      ValueError: a dependency that is not trackable (TF's message)."""

    def __init__(self, root=None, **kwargs):
        self._children: dict = {}
        if root is not None:
            if not _is_trackable(root):
                raise _not_trackable("root", root)
            for name, child in _children(root):
                self._children[name] = child
        for name, value in sorted(kwargs.items()):
            if not _is_trackable(value):
                raise _not_trackable(name, value)
            self._children[name] = value
        self._save_counter = None
        self._restoring = None

    def __setattr__(self, name, value):
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        if not _is_trackable(value):
            raise _not_trackable(name, value)
        self._children[name] = value

    def __getattr__(self, name):
        children = self.__dict__.get("_children", {})
        if name in children:
            return children[name]
        raise AttributeError(f"'Checkpoint' object has no attribute '{name}'")

    @property
    def save_counter(self):
        """An int64 variable counting the ``save`` calls (made on first use)."""
        if self._save_counter is None:
            from .core.tensor import Variable

            self._save_counter = Variable(np.int64(0), trainable=False, name="save_counter")
            self._children["save_counter"] = self._save_counter
        return self._save_counter

    def write(self, file_prefix, options=None) -> str:
        """Writes every tracked value to ``<file_prefix>.npz``; returns ``file_prefix``."""
        prefix = os.fspath(file_prefix)
        directory = os.path.dirname(prefix)
        if directory:
            os.makedirs(directory, exist_ok=True)
        np.savez(_npz(prefix), **_values(self))
        return prefix

    def save(self, file_prefix, options=None) -> str:
        """Increments ``save_counter``, writes ``<file_prefix>-<save_counter>`` and names it
        in the directory's ``checkpoint`` state file; returns that path."""
        from .checkpoint_manager import write_state

        counter = self.save_counter
        counter.assign_add(1)
        path = self.write(f"{os.fspath(file_prefix)}-{int(counter.numpy())}")
        write_state(os.path.dirname(path), path, [path])
        return path

    def read(self, save_path, options=None):
        """Restores the values ``write`` wrote (``restore``)."""
        return self.restore(save_path, options)

    def restore(self, save_path, options=None):
        """Assigns every tracked variable its saved value (``save_counter`` too); makes the
        optimizer slots the checkpoint holds. ``save_path`` None restores nothing.

        Returns:
          A status object (``assert_consumed``, ``assert_existing_objects_matched``,
          ``assert_nontrivial_match``, ``expect_partial``).

        Raises:
          NotFoundError: no checkpoint at ``save_path`` (TF's message)."""
        if save_path is None:
            return InitializationOnlyStatus()
        path = _npz(save_path)
        if not os.path.exists(path):
            raise errors.NotFoundError(
                f"Error when restoring from checkpoint or SavedModel at {save_path}: "
                f"Unsuccessful TensorSliceReader constructor: Failed to find any matching "
                f"files for {save_path}\nPlease double-check that the path is correct. You "
                "may be missing the checkpoint suffix (e.g. the '-1' in 'path/to/ckpt-1').")
        with np.load(path) as data:
            saved = {key: data[key] for key in data.files}
        if any(k.startswith("save_counter" + _VALUE) for k in saved):
            _ = self.save_counter
        self._restoring = _Restore(saved)
        self._assign_pending()
        if self._restoring.pending:
            _WAITING.add(self)
        return CheckpointLoadStatus(self, self._restoring)

    def _assign_pending(self) -> None:
        """Assigns the saved values whose variables (and optimizer slots) exist now."""
        state = self._restoring
        self._make_saved_slots(state.pending)
        paths, optimizers = _walk(self)
        for p, var in paths.items():
            value = state.pending.pop(p + _VALUE, None)
            if value is not None:
                var.assign(value.astype(var.dtype, copy=False))
                state.bound.add(id(var))
        for key, weight in _slot_weights(paths, optimizers):
            value = state.pending.pop(key, None)
            if value is not None:
                weight.assign(value.astype(weight.dtype, copy=False))
        if not state.pending:
            _WAITING.discard(self)

    def _make_saved_slots(self, saved) -> None:
        """Creates the iterations, hyperparameter and slot variables of the tracked
        optimizers that the checkpoint holds values for and that do not exist yet."""
        paths, optimizers = _walk(self)
        for opt_path, opt in optimizers:
            if f"{opt_path}/iter{_VALUE}" in saved:
                _ = opt.iterations
            if any(k.startswith(opt_path + "/") and k.endswith(_VALUE) and
                   not k.startswith(f"{opt_path}/iter/") for k in saved):
                opt._create_hypers()
            owners = {k.split(_SLOT)[0] for k in saved if f"{_SLOT}{opt_path}/" in k}
            missing = [paths[p] for p in sorted(owners)
                       if p in paths and id(paths[p]) not in opt._slots]
            if missing:
                opt._create_all_weights(missing)
