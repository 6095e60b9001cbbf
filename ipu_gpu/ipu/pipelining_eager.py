"""A pipeline run when it is called (``ipu_compiler.compile`` outside a graph, a function
run by ``IPUStrategy.run``): the executions of ``pipelining_ops``'s module docstring, each
micro-batch's stages and optimizer function on a gradient tape, the gradients accumulated
on eager tensors and applied once per execution with the optimizer's ``apply_gradients``."""

from __future__ import annotations

from ..core import nest
from ..core.tape import GradientTape
from ..emulation import engine, observe


def _cast(x, dtype):
    from ..ops.math import cast

    return x if x.dtype == dtype else cast(x, dtype)


def accumulate(acc, value, scales):
    """``acc * accum_scale + value * grad_scale`` (a None scale is 1; a None ``acc`` is
    zero), in ``acc``'s dtype."""
    accum_scale, grad_scale = scales
    if grad_scale is not None:
        value = value * _cast_scalar(grad_scale, value.dtype)
    if acc is None:
        return value
    if accum_scale is not None:
        acc = acc * _cast_scalar(accum_scale, acc.dtype)
    return acc + value


def _cast_scalar(s, dtype):
    from ..core.convert import convert_to_tensor

    return convert_to_tensor(float(s), dtype=dtype)


def _variables(cfg, opt_fn, tape):
    from .pipelining_ops import _is_keras_optimizer

    if _is_keras_optimizer(opt_fn.opt):
        if opt_fn.tape:
            return list(opt_fn.tape.watched_variables())
        if opt_fn.variables:
            return list(opt_fn.variables)
        raise RuntimeError("No variables to optimize. When using OptimzerV2, "
                           "OptimizerFunctionOutput must contain a list of variables or a "
                           "GradientTape.")
    var_list = opt_fn.compute_gradients_kwargs.get("var_list")
    if var_list is None and opt_fn.compute_gradients_args:
        var_list = opt_fn.compute_gradients_args[0]
    if var_list is None:
        var_list = [v for v in tape.watched_variables() if getattr(v, "trainable", True)]
    if not var_list:
        raise ValueError("No variables to optimize.")
    return list(var_list)


def _enqueue(cfg, value) -> None:
    if value is not None:
        cfg.outfeed_queue.enqueue(value)


def run(cfg, ga: int) -> None:
    """Run the pipeline of ``cfg`` (a validated ``pipelining_ops._Config``) with ``ga``
    micro-batches per execution."""
    from .pipelining_ops import check_depth

    check_depth(ga, cfg.overlap)
    for _ in range(cfg.repeat_count):
        grads = None
        outfeed_acc = None
        structure = None
        variables = opt_fn = None
        for n in range(ga):
            element = None if cfg.infeed_queue is None else cfg.infeed_queue._next_element()
            args, kwargs = cfg.stage_args(element)
            if cfg.training:
                with GradientTape(persistent=True) as tape:
                    outputs = cfg.run_stages(args, kwargs)
                    opt_fn = cfg.optimizer_output(outputs)
                value = cfg.outfeed_value(outputs, opt_fn.loss)
                variables = _variables(cfg, opt_fn, tape)
                # every stage's backward at once, from the last stage (engine.stage)
                last = len(cfg.computational_stages) - 1
                with engine.stage(cfg.stage_shard(last), last, "backward"):
                    g = _wrapped_gradients(opt_fn.opt, tape.gradient(opt_fn.loss, variables),
                                           variables)
                    scales = cfg.scales(n, ga)
                    if grads is None:
                        grads = [None] * len(variables)
                        dtypes = [cfg.acc_dtype(v) for v in variables]
                    grads = [a if gi is None else accumulate(a, _cast(_dense(gi), d), scales)
                             for a, gi, d in zip(grads, g, dtypes)]
            else:
                outputs = cfg.run_stages(args, kwargs)
                value = cfg.outfeed_value(outputs, None)
            if not cfg.accumulate_outfeed:
                _enqueue(cfg, value)
            elif value is not None:
                structure = value
                leaves = nest.flatten(value)
                if outfeed_acc is None:
                    outfeed_acc = [_cast(t, cfg.outfeed_dtype(t)) for t in leaves]
                else:
                    outfeed_acc = [a + _cast(t, a.dtype) for a, t in zip(outfeed_acc, leaves)]
        if cfg.training and variables is not None:
            _apply(opt_fn, list(zip(grads, variables)))
            if observe.observer is not None:  # a run report counts the optimizer's slots
                observe.observer.optimizer(opt_fn.opt)
        if outfeed_acc is not None:
            _enqueue(cfg, nest.pack_sequence_as(structure, outfeed_acc))


def _wrapped_gradients(opt, grads, variables) -> list:
    """What the ``compute_gradients`` of ``ipu.optimizers`` wrappers around a
    ``tf.compat.v1`` optimizer make of one micro-batch's gradients, run eagerly:
    ``CrossReplicaOptimizer`` averages them across the replicas, ``MapGradientOptimizer``
    maps them (per micro-batch, before the accumulation, as in TensorFlow)."""
    from .optimizers import CrossReplicaOptimizer, IpuOptimizer, MapGradientOptimizer

    chain = []
    while isinstance(opt, (CrossReplicaOptimizer, IpuOptimizer)):
        chain.append(opt)
        opt = opt._opt
    for wrapper in reversed(chain):  # the innermost compute_gradients runs first
        if isinstance(wrapper, CrossReplicaOptimizer):
            from ..ops.collectives import cross_replica_mean

            grads = [None if g is None else cross_replica_mean(_dense(g)) for g in grads]
        elif isinstance(wrapper, MapGradientOptimizer):
            grads = [None if g is None else wrapper._map(g, v.read_value())
                     for g, v in zip(grads, variables)]
    return list(grads)


def _apply(opt_fn, pairs) -> None:
    from .pipelining_ops import _is_keras_optimizer

    if _is_keras_optimizer(opt_fn.opt):
        opt_fn.opt.apply_gradients(pairs, *opt_fn.apply_gradients_args,
                                   **opt_fn.apply_gradients_kwargs)
        return
    from ..graph.optimizer_base import apply_eagerly  # a tf.compat.v1 optimizer, run eagerly
    from .optimizers import CrossReplicaOptimizer, IpuOptimizer

    opt = opt_fn.opt
    while isinstance(opt, (CrossReplicaOptimizer, IpuOptimizer)):
        opt = opt._opt
    apply_eagerly(opt, [(g, v) for g, v in pairs if g is not None])


def _dense(g):
    from ..core.indexed_slices import IndexedSlices

    if isinstance(g, IndexedSlices):
        from ..core.convert import convert_to_tensor

        return convert_to_tensor(g)
    return g
