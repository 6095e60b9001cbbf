"""``tf.nn.compute_average_loss`` and ``tf.nn.scale_regularization_loss``: losses scaled for
the replicas of a ``tf.distribute`` strategy (TensorFlow's ``nn_impl``), for custom training
loops under ``IPUStrategy``/``PopDistStrategy``. They are compositions of ops, so they run
eagerly, in IPU programs and in TF1 graphs."""

from __future__ import annotations

from . import distribute
from .distribute import as_tensor

__all__ = ["compute_average_loss", "scale_regularization_loss"]


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """Scales per-example losses with sample_weights and computes their average.

    Args:
      per_example_loss: Per-example loss (rank >= 1).
      sample_weight: Optional weighting for each example (broadcast to the losses).
      global_batch_size: Optional global batch size value. Defaults to (size of first
        dimension of ``per_example_loss``) * (number of replicas in sync).

    Returns:
      Scalar loss value, obtained by summing the ``per_example_loss`` and dividing by
      ``global_batch_size``. If ``global_batch_size`` is zero, the result is zero.

    Raises:
      ValueError: a scalar ``per_example_loss``, or a ``global_batch_size`` that is not a
        non-negative integer scalar.
      RuntimeError: no ``global_batch_size`` in a strategy's cross-replica context (TF's
        message).
    """
    import ipu_gpu as tf

    per_example_loss = as_tensor(per_example_loss)
    input_dtype = per_example_loss.dtype
    if len(per_example_loss.shape) == 0:
        raise ValueError(f"Invalid value passed for `per_example_loss`. Expected a tensor "
                         f"with at least rank 1. Received: {per_example_loss}")
    if sample_weight is not None:
        weights = tf.cast(as_tensor(sample_weight), input_dtype)
        per_example_loss = per_example_loss * tf.broadcast_to(
            weights, tf.shape(per_example_loss))
    per_example_loss = tf.cast(per_example_loss, input_dtype)
    if global_batch_size is None:
        if distribute.has_strategy() and distribute.in_cross_replica_context():
            raise RuntimeError("You are calling `compute_average_loss` in cross replica "
                               "context, while it was expected to be called in replica "
                               "context.")
        num_replicas = distribute.get_strategy().num_replicas_in_sync
        global_batch_size = tf.shape(per_example_loss)[0] * num_replicas
    global_batch_size = as_tensor(global_batch_size)
    if len(global_batch_size.shape) != 0:
        raise ValueError("global_batch_size must be scalar.")
    if global_batch_size.dtype.kind not in "iu":
        raise ValueError("global_batch_size must be an integer.")
    if tf.executing_eagerly() and int(global_batch_size.numpy()) < 0:
        raise ValueError("global_batch_size must be non-negative.")
    loss = tf.reduce_sum(per_example_loss)
    denominator = tf.cast(global_batch_size, input_dtype)
    nonzero = tf.not_equal(denominator, 0)
    safe = tf.where(nonzero, denominator, tf.ones_like(denominator))
    return tf.where(nonzero, loss / safe, tf.zeros_like(loss))


def scale_regularization_loss(regularization_loss):
    """Scales the sum of the given regularization losses by number of replicas.

    Raises:
      RuntimeError: in a strategy's cross-replica context (TF's message).
    """
    import ipu_gpu as tf

    if distribute.has_strategy() and distribute.in_cross_replica_context():
        raise RuntimeError("You are calling `scale_regularization_loss` in cross replica "
                           "context, while it was expected to be called in replica context.")
    num_replicas = distribute.get_strategy().num_replicas_in_sync
    return tf.reduce_sum(regularization_loss) / num_replicas
