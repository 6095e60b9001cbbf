"""Gradient transformations the optimizers apply before their update: each takes and returns
a list of ``(gradient, variable)`` pairs (Keras 2's ``optimizers/utils.py``), so a wrapper
(gradient accumulation, cross-replica mean, ...) can chain them in the same way.

The clipping functions are ``tf.clip_by_norm``/``tf.clip_by_global_norm`` (``ops/clip.py``),
which keep IndexedSlices (sparse gradients) as TF's do.
"""

from __future__ import annotations

import logging

from ... import distribute
from ...ops.clip import clip_by_global_norm, clip_by_norm, global_norm  # noqa: F401 - Keras's
from ...ops.math import clip_by_value

_LOG = logging.getLogger("tensorflow")


def filter_empty_gradients(grads_and_vars) -> tuple:
    """The pairs whose gradient is not None; logs Keras's warning naming the variables left
    out.

    Raises:
      ValueError: every gradient is None ("No gradients provided for any variable").
    """
    grads_and_vars = tuple(grads_and_vars)
    if not grads_and_vars:
        return grads_and_vars
    filtered = tuple(pair for pair in grads_and_vars if pair[0] is not None)
    if len(filtered) == len(grads_and_vars):
        return filtered
    if not filtered:
        names = ([v.name for _, v in grads_and_vars],)
        raise ValueError(f"No gradients provided for any variable: {names}. Provided "
                         f"`grads_and_vars` is {grads_and_vars}.")
    _LOG.warning("Gradients do not exist for variables %s when minimizing the loss. If you're "
                 "using `model.compile()`, did you forget to provide a `loss` argument?",
                 [v.name for g, v in grads_and_vars if g is None])
    return filtered


def all_reduce_sum_gradients(grads_and_vars) -> list:
    """Gradients summed over the replicas of the current ``tf.distribute`` strategy (inside an
    emulated IPU program: the cross-replica sum); unchanged outside any strategy."""
    grads_and_vars = list(grads_and_vars)
    if not distribute.has_strategy():
        return grads_and_vars
    present = [g for g, _ in grads_and_vars if g is not None]
    if not present:
        return grads_and_vars
    reduced = iter(distribute.get_replica_context().all_reduce("sum", present))
    return [(None if g is None else next(reduced), v) for g, v in grads_and_vars]


def make_gradient_clipnorm_fn(clipnorm):
    """A transformation clipping each gradient to norm ``clipnorm`` (identity for None)."""
    if clipnorm is None:
        return lambda grads_and_vars: grads_and_vars
    return lambda grads_and_vars: [(clip_by_norm(g, clipnorm), v) for g, v in grads_and_vars]


def make_global_gradient_clipnorm_fn(clipnorm):
    """A transformation clipping all gradients together to global norm ``clipnorm``."""
    if clipnorm is None:
        return lambda grads_and_vars: grads_and_vars

    def clip(grads_and_vars):
        grads, variables = zip(*grads_and_vars)
        clipped, _ = clip_by_global_norm(grads, clipnorm)
        return list(zip(clipped, variables))

    return clip


def make_gradient_clipvalue_fn(clipvalue):
    """A transformation clipping each gradient element to [-clipvalue, clipvalue]."""
    if clipvalue is None:
        return lambda grads_and_vars: grads_and_vars
    return lambda grads_and_vars: [(clip_by_value(g, -clipvalue, clipvalue), v)
                                   for g, v in grads_and_vars]
