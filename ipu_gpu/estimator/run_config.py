"""``tf.estimator.RunConfig``: where an Estimator writes (``model_dir``), how often it saves
checkpoints and summaries and logs the loss, and the random seed of its graphs. The
distribution settings (``TF_CONFIG``, ``train_distribute``, ...) are accepted and kept; the
emulator runs one worker, the chief."""

from __future__ import annotations

import os

__all__ = ["RunConfig"]

_USE_DEFAULT = object()
_DEFAULT_SAVE_SECS = 600

_KEYS = ["model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
         "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
         "keep_checkpoint_every_n_hours", "log_step_count_steps", "train_distribute",
         "device_fn", "protocol", "eval_distribute", "experimental_distribute",
         "experimental_max_worker_delay_secs", "session_creation_timeout_secs"]


class RunConfig:
    """The run configuration of an Estimator (TF 1.15's arguments and defaults).

    Checkpoints: every 600 seconds (and at the start and end of ``train``) unless
    ``save_checkpoints_steps`` or ``save_checkpoints_secs`` is given; both None disables
    them.

    Raises:
      ValueError: both ``save_checkpoints_steps`` and ``save_checkpoints_secs`` given."""

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=_USE_DEFAULT, save_checkpoints_secs=_USE_DEFAULT,
                 session_config=None, keep_checkpoint_max=5,
                 keep_checkpoint_every_n_hours=10000, log_step_count_steps=100,
                 train_distribute=None, device_fn=None, protocol=None, eval_distribute=None,
                 experimental_distribute=None, experimental_max_worker_delay_secs=None,
                 session_creation_timeout_secs=7200):
        if save_checkpoints_steps is _USE_DEFAULT and save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_steps, save_checkpoints_secs = None, _DEFAULT_SAVE_SECS
        elif save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps = None
        elif save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_secs = None
        if save_checkpoints_steps and save_checkpoints_secs:
            raise ValueError("Can not provide both save_checkpoints_steps and "
                             "save_checkpoints_secs.")
        if model_dir is not None:
            model_dir = os.fspath(model_dir)
        values = dict(locals())
        for key in _KEYS:
            setattr(self, "_" + key, values[key])
        self._master = ""

    def replace(self, **kwargs):
        """A copy with the given properties changed.

        Raises:
          ValueError: a key that is not a RunConfig property."""
        for key in kwargs:
            if key not in _KEYS:
                raise ValueError(f"Replacing {key} is not supported. Allowed properties are "
                                 f"{sorted(_KEYS)}.")
        values = {key: getattr(self, "_" + key) for key in _KEYS}
        values.update(kwargs)
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        RunConfig.__init__(new, **values)
        return new

    # Single-worker distribution properties, as TF sets them without TF_CONFIG.
    cluster_spec = property(lambda self: {})
    evaluator_master = property(lambda self: "")
    global_id_in_cluster = property(lambda self: 0)
    is_chief = property(lambda self: True)
    master = property(lambda self: self._master)
    num_ps_replicas = property(lambda self: 0)
    num_worker_replicas = property(lambda self: 1)
    task_id = property(lambda self: 0)
    task_type = property(lambda self: "worker")
    service = property(lambda self: None)


for _key in _KEYS:
    setattr(RunConfig, _key, property(lambda self, _k=_key: getattr(self, "_" + _k)))
