"""``keras.layers.experimental.SyncBatchNormalization``: Keras 2.6's name for
``BatchNormalization(synchronized=True)`` (training statistics over the replicas in sync)."""

from __future__ import annotations

from ..normalization import BatchNormalization

__all__ = ["SyncBatchNormalization"]


class SyncBatchNormalization(BatchNormalization):
    """``BatchNormalization`` whose training statistics are those of all replicas' batches.

    Raises:
      ValueError: ``fused=True`` (as ``BatchNormalization(synchronized=True)``).
    """

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        kwargs.pop("synchronized", None)
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center,
                         scale=scale, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer,
                         moving_mean_initializer=moving_mean_initializer,
                         moving_variance_initializer=moving_variance_initializer,
                         beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
                         beta_constraint=beta_constraint, gamma_constraint=gamma_constraint,
                         synchronized=True, **kwargs)
