"""A pipeline in a TF1 graph: traced once when ``pipeline`` is called (inside
``ipu_compiler.compile``), run at each ``Session.run`` of the program.

Tracing calls the stages once on placeholders standing for the infeed element, then the
``optimizer_function`` and ``compute_gradients`` (TF's graph gradients), and
``apply_gradients`` once on placeholders standing for the accumulated gradients (so the
optimizer's slots are made once, as in TensorFlow). The ``Pipeline`` node runs the
executions of ``pipelining_ops``'s module docstring: per micro-batch one evaluation of the
traced micro-batch (feeds, random draws and the outfeed enqueue happen per micro-batch), the
gradients accumulated on eager tensors, then one evaluation of the traced update fed the
accumulated gradients.
"""

from __future__ import annotations

from ..core import nest
from ..graph import program as _program
from ..graph.core import GraphTensor, add_node, get_default_graph
from ..graph.nodes import placeholder
from .pipelining_eager import _cast, _dense, accumulate


def _element_holders(infeed_queue):
    if infeed_queue is None:
        return None
    source = getattr(infeed_queue, "_source", None)
    if source is None:
        infeed_queue._ensure_source()
        source = infeed_queue._source
    spec = source.spec
    leaves = [placeholder(d, list(s), name="pipeline_infeed")
              for s, d in zip(spec.shapes, spec.dtypes)]
    return nest.pack_sequence_as(spec.structure, leaves)


def _gradients(opt_fn, loss):
    from .pipelining_ops import _is_keras_optimizer

    if _is_keras_optimizer(opt_fn.opt):
        from ..graph.nodes import gradients

        variables = list(opt_fn.tape.watched_variables()) if opt_fn.tape else \
            list(opt_fn.variables)
        if not variables:
            raise RuntimeError("No variables to optimize. When using OptimzerV2, "
                               "OptimizerFunctionOutput must contain a list of variables or a "
                               "GradientTape.")
        grads = gradients(loss, variables)
        if len(grads) != len(variables):
            raise RuntimeError("Inconsistent gradient and variable counts.")
        return list(zip(grads, variables))
    return list(opt_fn.opt.compute_gradients(loss, *opt_fn.compute_gradients_args,
                                             **opt_fn.compute_gradients_kwargs))


def _side_effects(graph, start, ops) -> list:
    """The outfeed enqueues made since ``start`` that ``ops`` do not already hold: they
    run with every evaluation, as the stateful operations of TF's pipeline functions do
    (a stage may enqueue activations to an outfeed of its own)."""
    return [op for op in graph._ops[start:]
            if op.type == "OutfeedEnqueue" and not any(op is o for o in ops)]


def _check_captures(graph, inside, inputs) -> None:
    """TF's rule for the functions of a pipeline: a graph tensor made outside it reaches the
    stages only as one of ``inputs`` (or the infeed); variables may be captured.

    Raises:
      ValueError: any other outside tensor used inside (TF's message)."""
    from ..graph.nodes import GraphVariable

    allowed = {id(t) for t in inputs}
    for op in graph._ops:
        if id(op) not in inside:
            continue
        for t in op.inputs:
            if id(t.op) in inside or id(t) in allowed or isinstance(t, GraphVariable):
                continue
            raise ValueError(f"Trying to capture the tensor {t} which is not a resource. This "
                             "tensor needs to be passed as either part of the `input` or "
                             "`infeed_queue` of the pipeline.")


def traced_pipeline(cfg):
    """The ``Pipeline`` operation of ``cfg`` (a validated ``pipelining_ops._Config``)."""
    graph = get_default_graph()
    ga_input = cfg.gradient_accumulation_count
    start = len(graph._ops)
    element = _element_holders(cfg.infeed_queue)
    saved = list(graph._control)
    graph._control = []
    try:
        with graph.name_scope(cfg.name):
            args, kwargs = cfg.stage_args(element)
            outputs = cfg.run_stages(args, kwargs)
            pairs, loss = [], None
            if cfg.training:
                opt_fn = cfg.optimizer_output(outputs)
                loss = opt_fn.loss
                pairs = _gradients(opt_fn, loss)
            value = cfg.outfeed_value(outputs, loss)
            micro_ops = []
            if value is not None and not cfg.accumulate_outfeed:
                micro_ops.append(cfg.outfeed_queue.enqueue(value))
            out_leaves = nest.flatten(value) if value is not None and cfg.accumulate_outfeed \
                else []
            micro_ops += _side_effects(graph, start, micro_ops)
            present = [(g, v) for g, v in pairs if g is not None]
            micro_tensors = [*out_leaves, *[g for g, _ in present]]
            inside_micro = {id(op) for op in graph._ops[start:]}
            micro = _program.Body(graph, inside_micro, micro_tensors, micro_ops,
                                  _program._tape_needed(micro_tensors, micro_ops))
            start_update = len(graph._ops)
            grad_holders = [placeholder(cfg.acc_dtype(v), _program._shape(v),
                                        name="accumulated_gradient") for _, v in present]
            out_holders = [placeholder(cfg.outfeed_dtype(t), _program._shape(t),
                                       name="accumulated_outfeed") for t in out_leaves]
            update_ops = []
            if cfg.training:
                held = iter(grad_holders)
                apply_pairs = [(None if g is None else next(held), v) for g, v in pairs]
                update = opt_fn.opt.apply_gradients(apply_pairs, *opt_fn.apply_gradients_args,
                                                    **opt_fn.apply_gradients_kwargs)
                if update is not None:
                    update_ops.append(update)
            if out_holders:
                packed = nest.pack_sequence_as(value, out_holders)
                update_ops.append(cfg.outfeed_queue.enqueue(packed))
            update_ops += _side_effects(graph, start_update, update_ops)
            inside_update = {id(op) for op in graph._ops[start_update:]}
            update_body = _program.Body(graph, inside_update, [], update_ops,
                                        _program._tape_needed([], update_ops))
    finally:
        graph._control = saved
    _check_captures(graph, inside_micro | inside_update, cfg.inputs)
    element_keys = nest.flatten(element) if element is not None else []
    out_dtypes = [_program._dtype(h) for h in out_holders]
    acc_dtypes = [_program._dtype(h) for h in grad_holders]
    n_out = len(out_leaves)

    def run(the_run, ga_value=None):
        from .pipelining_ops import _ga_value, check_depth

        ga = _ga_value(ga_input if ga_value is None else ga_value)
        check_depth(ga, cfg.overlap)
        evaluate = micro.bind(the_run.values, element_keys)
        apply = update_body.bind(the_run.values, [*grad_holders, *out_holders])
        for _ in range(cfg.repeat_count):
            grads = [None] * len(present)
            outs = [None] * n_out
            for n in range(ga):
                feed = []
                if cfg.infeed_queue is not None:
                    feed = nest.flatten(cfg.infeed_queue._next_element())
                values = evaluate(feed)
                scales = cfg.scales(n, ga)
                outs = [_cast(v, d) if a is None else a + _cast(v, a.dtype)
                        for a, v, d in zip(outs, values[:n_out], out_dtypes)]
                grads = [accumulate(a, _cast(_dense(g), d), scales)
                         for a, g, d in zip(grads, values[n_out:], acc_dtypes)]
            if ga and update_ops:
                apply([*grads, *outs])
        return []
    inputs = [ga_input] if isinstance(ga_input, GraphTensor) else []
    node = add_node(graph, "Pipeline", cfg.name, inputs, run, [], pass_run=True)
    _program._capture(node, graph, inside_micro, inside_update)
    return node
