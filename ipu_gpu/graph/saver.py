"""``tf.compat.v1.train.Saver`` and ``latest_checkpoint``.

The checkpoint format is ipu_gpu's own, documented here and stable: ``save(sess, prefix,
global_step=N)`` writes ``<prefix>-<N>.npz`` (numpy's npz: one array per variable, keyed by
the variable's name without ``:0``) and a TF-style state file ``checkpoint`` beside it::

    model_checkpoint_path: "<prefix>-<N>"
    all_model_checkpoint_paths: "<older prefix>"
    all_model_checkpoint_paths: "<prefix>-<N>"

As TF writes it, a path in the state file is relative to the directory when the directory
was given relative (``save(sess, "ckpt/model")`` writes ``"model-<N>"``), and
``get_checkpoint_state``/``latest_checkpoint`` join it back; ``latest_checkpoint`` gives
None when the newest checkpoint's file is gone.

``restore(sess, path)`` assigns every saved variable (a graph variable not yet initialized is
initialized by it, as TF's restore does). ``max_to_keep`` checkpoints are kept, oldest deleted.
TF's own checkpoint files (``.index``/``.data-*``) are not read or written.
"""

from __future__ import annotations

import os
import re

import numpy as np

from ..core.tensor import Variable
from .nodes import GraphVariable, global_variables

__all__ = ["CheckpointState", "Saver", "checkpoint_exists", "get_checkpoint_state",
           "latest_checkpoint"]

_STATE = "checkpoint"


def _key(var) -> str:
    name = var.op.name if isinstance(var, GraphVariable) else getattr(var, "name", "")
    return re.sub(r":\d+$", "", name)


class Saver:
    """Saves and restores variables (default: every global variable of the default graph).

    Raises:
      ValueError: no variables to save (TF's message)."""

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
                 saver_def=None, builder=None, defer_build=False, allow_empty=False,
                 write_version=2, pad_step_number=False, save_relative_paths=False,
                 filename=None):
        if isinstance(var_list, dict):
            self._vars = dict(var_list)
        else:
            var_list = global_variables() if var_list is None else list(var_list)
            self._vars = {_key(v): v for v in var_list}
        if not self._vars and not allow_empty:
            raise ValueError("No variables to save")
        self._max_to_keep = max_to_keep
        self._kept: list[str] = []

    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False) -> str:
        """Writes the variables' values; returns the checkpoint's path prefix."""
        if global_step is not None:
            step = global_step if isinstance(global_step, (int, np.integer)) else \
                int(sess.run(global_step))
            prefix = f"{save_path}-{int(step)}"
        else:
            prefix = str(save_path)
        values = {key: np.asarray(sess.run(var)) for key, var in self._vars.items()}
        directory = os.path.dirname(prefix) or "."
        os.makedirs(directory, exist_ok=True)
        np.savez(prefix + ".npz", **values)
        if prefix in self._kept:
            self._kept.remove(prefix)
        self._kept.append(prefix)
        while self._max_to_keep and len(self._kept) > self._max_to_keep:
            old = self._kept.pop(0)
            if os.path.exists(old + ".npz"):
                os.remove(old + ".npz")
        if write_state:
            with open(os.path.join(directory, latest_filename or _STATE), "w") as f:
                f.write(repr(_state_proto(directory, prefix, self._kept)))
        return prefix

    @property
    def last_checkpoints(self) -> list:
        """The prefixes of the checkpoints this saver keeps, oldest first."""
        return list(self._kept)

    def recover_last_checkpoints(self, checkpoint_paths) -> None:
        """Keeps ``checkpoint_paths`` (oldest first; those whose files exist) as this saver's
        checkpoints, so ``max_to_keep`` counts them (TF's recovery after a restart)."""
        self._kept = [p for p in checkpoint_paths if checkpoint_exists(p)]

    def restore(self, sess, save_path) -> None:
        """Assigns every variable its value in the checkpoint ``save_path`` (a prefix).

        Raises:
          ValueError: ``save_path`` is None; NotFoundError-like ValueError for a missing
            checkpoint or variable."""
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        path = save_path if save_path.endswith(".npz") else save_path + ".npz"
        if not os.path.exists(path):
            raise ValueError(f"The passed save_path is not a valid checkpoint: {save_path}")
        with np.load(path) as data:
            for key, var in self._vars.items():
                if key not in data:
                    raise ValueError(f"Key {key} not found in checkpoint {save_path}")
                _assign(var, data[key])


def _assign(var, value) -> None:
    if isinstance(var, GraphVariable):
        if var._variable is None:
            var._variable = Variable(value, trainable=var.trainable, name=var.op.name)
        else:
            var._variable.assign(value)
    else:
        var.assign(value)


class CheckpointState:
    """The contents of a ``checkpoint`` state file (TF's ``CheckpointState`` proto)."""

    def __init__(self, model_checkpoint_path="", all_model_checkpoint_paths=()):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)

    def __repr__(self) -> str:
        lines = [f'model_checkpoint_path: "{self.model_checkpoint_path}"']
        lines += [f'all_model_checkpoint_paths: "{p}"' for p in self.all_model_checkpoint_paths]
        return "\n".join(lines) + "\n"


def _state_proto(save_dir, model_path, all_paths):
    """TF's ``generate_checkpoint_state_proto``: with a relative ``save_dir``, relative
    paths are written relative to it."""
    def rel(p):
        if not os.path.isabs(save_dir) and not os.path.isabs(p):
            return os.path.relpath(p, save_dir)
        return p
    return CheckpointState(rel(model_path), [rel(p) for p in all_paths])


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The ``CheckpointState`` of the state file in ``checkpoint_dir`` (relative paths joined
    to the directory, as TF does), or None when there is none."""
    path = os.path.join(checkpoint_dir, latest_filename or _STATE)
    if not os.path.exists(path):
        return None
    model, paths = "", []
    with open(path) as f:
        for line in f:
            m = re.match(r'(model_checkpoint_path|all_model_checkpoint_paths): "(.*)"',
                         line.strip())
            if m is None:
                continue
            p = m.group(2)
            if not os.path.isabs(p):
                p = os.path.join(checkpoint_dir, p)
            if m.group(1) == "model_checkpoint_path":
                model = p
            else:
                paths.append(p)
    return CheckpointState(model, paths)


def checkpoint_exists(checkpoint_prefix) -> bool:
    """Whether a checkpoint with this prefix was written (ipu_gpu's ``<prefix>.npz``, or the
    ``<prefix>.index`` of TF's V2 layout, which Keras's ``save_weights`` writes)."""
    return (os.path.exists(f"{checkpoint_prefix}.npz")
            or os.path.exists(f"{checkpoint_prefix}.index"))




def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest checkpoint the state file in ``checkpoint_dir`` names, or
    None (no state file, or that checkpoint's file is gone)."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not state.model_checkpoint_path:
        return None
    if checkpoint_exists(state.model_checkpoint_path):
        return state.model_checkpoint_path
    return None
