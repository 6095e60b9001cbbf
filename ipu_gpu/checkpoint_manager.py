"""``tf.train.CheckpointManager``: numbered checkpoints of a ``tf.train.Checkpoint`` in one
directory, the newest ``max_to_keep`` kept, named in the directory's ``checkpoint`` state
file (``tf.train.latest_checkpoint`` reads it; a new manager on the directory continues
from it, as TF's)."""

from __future__ import annotations

import os
import time

__all__ = ["CheckpointManager", "write_state"]


def write_state(directory, latest, paths) -> None:
    """The ``checkpoint`` state file naming ``latest`` and ``paths``, relative to
    ``directory`` (TF's ``save_relative_paths``)."""
    from .graph import saver

    directory = directory or "."
    rel = lambda p: os.path.relpath(p, directory)  # noqa: E731
    state = saver.CheckpointState(rel(latest), [rel(p) for p in paths])
    with open(os.path.join(directory, "checkpoint"), "w") as f:
        f.write(repr(state))


class CheckpointManager:
    """Manages multiple checkpoints by keeping some and deleting unneeded ones.

    Args:
      checkpoint: the ``tf.train.Checkpoint`` to save and restore.
      directory: where checkpoints are written (made on the first save).
      max_to_keep: how many to keep, oldest deleted first (None: all).
      keep_checkpoint_every_n_hours: also keep one checkpoint per this many hours.
      checkpoint_name: the files' prefix (``<directory>/<name>-<number>``).
      step_counter: a variable read by ``save`` for ``checkpoint_interval``.
      checkpoint_interval: save only when ``step_counter`` advanced this much.
      init_fn: what ``restore_or_initialize`` calls when there is no checkpoint.

    Raises:
      ValueError: ``checkpoint_interval`` without ``step_counter``, or a ``max_to_keep``
        below 1 (TF's messages)."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None,
                 init_fn=None):
        from .graph import saver

        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"Expected a positive integer or `None` for `max_to_keep`, "
                             f"got {max_to_keep}.")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("`step_counter` should be passed if `checkpoint_interval` is "
                             "not None.")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._keep_hours = keep_checkpoint_every_n_hours
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._interval = checkpoint_interval
        self._init_fn = init_fn
        self._last_step = None
        self._last_preserved = time.time()
        state = saver.get_checkpoint_state(self._directory)
        self._kept = []  # (path, time written), oldest first
        if state is not None:
            now = time.time()
            for path in state.all_model_checkpoint_paths:
                if saver.checkpoint_exists(path):
                    self._kept.append((path, now))
            latest = state.model_checkpoint_path
            if latest and saver.checkpoint_exists(latest) and \
                    latest not in [p for p, _ in self._kept]:
                self._kept.append((latest, now))

    directory = property(lambda self: self._directory)
    checkpoint = property(lambda self: self._checkpoint)
    checkpoint_interval = property(lambda self: self._interval)

    @property
    def checkpoints(self) -> list:
        """The paths of the kept checkpoints, oldest first."""
        return [p for p, _ in self._kept]

    @property
    def latest_checkpoint(self):
        """The newest kept checkpoint's path, or None."""
        return self._kept[-1][0] if self._kept else None

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Writes ``<directory>/<checkpoint_name>-<n>`` (``n``: ``checkpoint_number``, else
        the checkpoint's incremented ``save_counter``), deletes the checkpoints beyond
        ``max_to_keep`` and updates the state file; returns the path, or None when
        ``checkpoint_interval`` says it is too early."""
        if self._interval is not None and check_interval:
            step = int(self._step_counter.numpy() if hasattr(self._step_counter, "numpy")
                       else self._step_counter)
            if self._last_step is not None and step < self._last_step + self._interval:
                return None
            self._last_step = step
        counter = self._checkpoint.save_counter
        counter.assign_add(1)
        if checkpoint_number is None:
            checkpoint_number = int(counter.numpy())
        elif hasattr(checkpoint_number, "numpy"):
            checkpoint_number = int(checkpoint_number.numpy())
        path = self._checkpoint.write(f"{self._prefix}-{int(checkpoint_number)}")
        self._kept = [(p, t) for p, t in self._kept if p != path]
        self._kept.append((path, time.time()))
        self._sweep()
        write_state(self._directory, path, self.checkpoints)
        return path

    def _sweep(self) -> None:
        if self._max_to_keep is None:
            return
        while len(self._kept) > self._max_to_keep:
            path, written = self._kept.pop(0)
            if self._keep_hours and written - self._keep_hours * 3600 >= self._last_preserved:
                self._last_preserved = written
                continue
            if os.path.exists(path + ".npz"):
                os.remove(path + ".npz")

    def restore_or_initialize(self):
        """Restores the newest checkpoint and returns its path; without one, calls
        ``init_fn`` (if given) and returns None."""
        if self.latest_checkpoint is not None:
            self._checkpoint.restore(self.latest_checkpoint)
            return self.latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None
