"""``tensorflow.python.ipu.serving``: export a model as a SavedModel holding an executable
compiled for the embedded application runtime (Graphcore's SDK 3 API).

The SavedModel is ipu_gpu's format (``saved_model/save_load.py``): the compiled loop is an
executable under ``assets/`` (``application_compile_op``'s file), the optional CPU
preprocessing and postprocessing steps are traced programs, and ``saved_model.json`` names
them as the function ``predict`` and the signature ``serving_default``. Only ipu_gpu loads it
(``tf.saved_model.load``), in this process or a fresh one. Variables are frozen to their
values at export time.
"""

from __future__ import annotations

import inspect
import os
import shutil
import uuid

from ..core.spec import TensorSpec

__all__ = ["export_for_ipu_serving", "export_keras", "export_pipeline", "export_single_step"]


# ---- argument checks (Graphcore's rules and messages) ----------------------------------------
def _validate_export_dir(export_dir, purge_export_dir):
    if os.path.isdir(export_dir) and os.listdir(export_dir):
        if purge_export_dir:
            shutil.rmtree(export_dir)
        else:
            raise ValueError(f'Directory "{export_dir}" is not empty. '
                             'Please specify an empty directory.')


def _is_function(fn) -> bool:
    from ..function import Function

    return isinstance(fn, Function)


def _validate_signatures(predict_step, predict_step_signature=None, input_dataset=None,
                         preprocessing_step=None, preprocessing_step_signature=None,
                         postprocessing_step=None, postprocessing_step_signature=None):
    from ..data import Dataset

    def from_tf_function(fn, fn_name, dataset_possible=True):
        tail = " or `input_dataset`." if dataset_possible else "."
        if not _is_function(fn):
            raise ValueError(f"`input_signature` deduction from given `{fn_name}` is not "
                             "possible. Please mark it as tf.function with `input_signature` "
                             f"parameter set or provide `{fn_name}_signature`" + tail)
        if fn.input_signature is None:
            raise ValueError("Empty `input_signature` inside provided tf.function "
                             "`predict_step`. Please specify it or provide "
                             "`predict_step_signature`" + tail)

    def single(signature_name, signature):
        if not isinstance(signature, (tuple, list)):
            raise TypeError(f"`{signature_name}` must be an instance of tuple or list. "
                            f"Received {type(signature)}")
        if not signature:
            raise ValueError(f"`{signature_name}` must be not empty.")
        for idx, value in enumerate(signature):
            if not isinstance(value, TensorSpec):
                raise TypeError(f"`{signature_name}[{idx}]` is not an instance of TensorSpec")

    if preprocessing_step is None:
        if input_dataset is not None and predict_step_signature is not None:
            raise ValueError("Both `predict_step_signature` and `input_dataset` cannot be "
                             "provided. Please pass only one of them.")
        if input_dataset is None and predict_step_signature is None:
            from_tf_function(predict_step, "predict_step")
    else:
        if preprocessing_step_signature is not None and input_dataset is not None:
            raise ValueError("Both `preprocessing_step_signature` and `input_dataset` cannot "
                             "be provided. Please pass only one of them.")
        if predict_step_signature is None and input_dataset is None:
            from_tf_function(preprocessing_step, "preprocessing_step")
        if predict_step_signature is None:
            from_tf_function(predict_step, "predict_step", dataset_possible=False)
    if input_dataset is not None and not isinstance(input_dataset, Dataset):
        raise TypeError("If `input_dataset` is provided, it should be an instance of "
                        "tf.Dataset.")
    if postprocessing_step is not None and postprocessing_step_signature is None:
        from_tf_function(postprocessing_step, "postprocessing_step", dataset_possible=False)
    for name, sig in (("preprocessing_step_signature", preprocessing_step_signature),
                      ("postprocessing_step_signature", postprocessing_step_signature),
                      ("predict_step_signature", predict_step_signature)):
        if sig is not None:
            single(name, sig)


def _python(fn):
    """(the Python function to trace, its parameter names: None when it takes ``*args``) of
    a callable or tf.function."""
    if _is_function(fn):
        leading = fn._leading()
        params = fn._parameters()

        def call(*a):
            return fn._python_function(*leading, *a)
    else:
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = []
        call = fn
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return call, None
    return call, [p.name for p in params]


def _prepare_input_signature(defunc, defunc_signature=None, input_dataset=None,
                             non_feed_inputs=None, remove_non_feed_inputs=True) -> list:
    signature = None
    if defunc_signature is not None:
        signature = defunc_signature
    elif input_dataset is not None:
        spec = input_dataset.element_spec
        signature = (spec,) if isinstance(spec, TensorSpec) else tuple(spec)
        signature = tuple(_specs_of(non_feed_inputs)) + signature
    elif _is_function(defunc):
        signature = defunc.input_signature
    name = getattr(defunc, "__name__", getattr(defunc, "_name", "function"))
    if signature is None:
        raise ValueError(f"Missing input_signature for {name}")
    if not isinstance(signature, (tuple, list)):
        raise TypeError(f"input_signature must be either a tuple or a list, received "
                        f"{type(signature)}")
    names = _python(defunc)[1]
    if names is None:  # *args: the specs' names
        names = [s.name or f"input_{i}" for i, s in enumerate(signature)]
    if non_feed_inputs is not None and remove_non_feed_inputs:
        names = names[len(non_feed_inputs):]
        if len(signature) > len(names):
            signature = signature[len(non_feed_inputs):]
    if len(signature) != len(names):
        raise ValueError(f"Length of input_signature does not match the number of {name} "
                         f"arguments, input_signature : {signature}, names : {names}")
    return [TensorSpec.from_spec(s, name=n) for s, n in zip(signature, names)]


def _specs_of(tensors) -> list:
    if tensors is None:
        return []
    return [TensorSpec.from_tensor(t) for t in tensors]


# ---- exporting ------------------------------------------------------------------------------
def _feeds(signature, input_dataset):
    from ..data import Dataset
    from ..ops.creation import zeros
    from . import ipu_infeed_queue, ipu_outfeed_queue

    if input_dataset is None:
        element = tuple(zeros(s.shape.as_list(), s.dtype) for s in signature)
        input_dataset = Dataset.from_tensors(element).repeat()
    return ipu_infeed_queue.IPUInfeedQueue(input_dataset), ipu_outfeed_queue.IPUOutfeedQueue()


def _trace_step(fn, specs):
    """A CPU step (pre- or postprocessing) traced once with its variables frozen."""
    from ..saved_model import save_load

    python_fn, _ = _python(fn)
    return save_load.traced_call(python_fn, (), specs, freeze=True)


def _export(program, export_dir, input_signature, output_names, predict_signature,
            preprocessing_step, postprocessing_signature, postprocessing_step,
            variable_initializer=None):
    """Compile ``program`` (the IPU loop), write the SavedModel and return its loaded
    ``predict`` function."""
    from ..graph import core as graph_core
    from ..saved_model import executable, save_load

    if output_names is not None:
        if isinstance(output_names, str):
            output_names = [output_names]
        if not isinstance(output_names, list):
            raise TypeError(f"output_names must be either a string or a list, received "
                            f"{type(output_names)}")
    graph = graph_core.get_default_graph() if graph_core.building() else None
    trace = executable.Trace(graph, program, [])
    if variable_initializer is not None:
        from ..graph.session import Session

        with Session(graph=trace.graph) as sess:
            variable_initializer(sess)
    exe = executable.finish(trace, True)
    pre = _trace_step(preprocessing_step, input_signature) if preprocessing_step else None
    if pre is not None:
        _check_io(pre.output_specs, predict_signature, "preprocessing_step",
                  "predict_step")
    post = None
    if postprocessing_step is not None:
        streamed = [TensorSpec(t.shape, t.dtype) for t in exe.signature.streamed_outputs]
        _check_io(streamed, postprocessing_signature, "predict_step",
                  "postprocessing_step_signature")
        post = _trace_step(postprocessing_step, postprocessing_signature)
    unique = uuid.uuid4().hex
    os.makedirs(os.path.join(export_dir, "assets"), exist_ok=True)
    rel = f"assets/application_{unique}.popef"
    executable.write(os.path.join(export_dir, rel), exe)
    writer = save_load.Writer(export_dir)
    entry = {"kind": "embedded", "executable": rel, "engine_name": f"engine_{unique}",
             "inputs": [save_load._spec_json(s) for s in input_signature],
             "output_names": output_names,
             "preprocessing": writer.add_program("preprocessing", pre) if pre else None,
             "postprocessing": writer.add_program("postprocessing", post) if post else None}
    writer.functions["predict"] = entry
    writer.signatures = {save_load.DEFAULT_SERVING_SIGNATURE_DEF_KEY: "predict"}
    writer.write()
    return save_load.load(export_dir).predict


def _check_io(source_specs, dst_signature, src_name, dst_name):
    if len(source_specs) != len(dst_signature):
        raise ValueError(f"The number of the `{src_name}` outputs does not match the number of "
                         f"`tf.TensorSpec` objects in the signature of `{dst_name}`.")
    for idx, (src, dst) in enumerate(zip(source_specs, dst_signature)):
        if src.shape.as_list() != dst.shape.as_list() or src.dtype != dst.dtype:
            raise ValueError(f"`{src_name}` returned Tensor at postion {idx} does not match "
                             f"required `{dst_name}` TensorSpec.\nTensor shape{src.shape}, "
                             f"dtype {src.dtype}\nExpected TensorSpec shape {dst.shape}, "
                             f"dtype {dst.dtype}\n")


def _loop(step, signature, input_dataset, iterations):
    from . import loops

    infeed, outfeed = _feeds(signature, input_dataset)

    def body(*args):
        return outfeed.enqueue(step(*args))
    return lambda: loops.repeat(iterations, body, [], infeed)


def export_single_step(predict_step, export_dir, iterations, predict_step_signature=None,
                       input_dataset=None, output_names=None, preprocessing_step=None,
                       preprocessing_step_signature=None, postprocessing_step=None,
                       postprocessing_step_signature=None, purge_export_dir=False, *,
                       variable_initializer=None):
    """Create a SavedModel in ``export_dir`` for TensorFlow Serving.

    Wrap ``predict_step`` inside a loop of ``iterations``, add an infeed for the inputs and an
    outfeed for the outputs, freeze variables into constants and write a SavedModel with the
    compiled executable (preceded by the optional CPU ``preprocessing_step`` and followed by
    the optional CPU ``postprocessing_step``). ``variable_initializer(session)`` (the TF1 API's
    argument) initializes TF1 graph variables before they are frozen.

    Returns:
      The exported predict function (the SavedModel's, loaded back): it runs the executable
      with the embedded application runtime.

    Raises:
      ValueError: ``export_dir`` is not empty (without ``purge_export_dir``); signatures
        missing, empty or contradictory; step outputs that do not match the next step's
        signature.
      TypeError: a signature is not a tuple or list of TensorSpec; ``input_dataset`` is not
        a Dataset; ``output_names`` is neither a string nor a list.
    """
    export_dir = os.fspath(export_dir)
    _validate_export_dir(export_dir, purge_export_dir)
    _validate_signatures(predict_step, predict_step_signature, input_dataset,
                         preprocessing_step, preprocessing_step_signature,
                         postprocessing_step, postprocessing_step_signature)
    if preprocessing_step is not None:
        input_signature = _prepare_input_signature(preprocessing_step,
                                                   preprocessing_step_signature, input_dataset)
        predict_step_signature = _prepare_input_signature(predict_step, predict_step_signature)
    else:
        input_signature = _prepare_input_signature(predict_step, predict_step_signature,
                                                   input_dataset)
        predict_step_signature = input_signature
    if postprocessing_step is not None:
        postprocessing_step_signature = _prepare_input_signature(
            postprocessing_step, postprocessing_step_signature)
    step = _python(predict_step)[0]
    loop = _loop(step, predict_step_signature,
                 input_dataset if preprocessing_step is None else None, iterations)
    return _export(loop, export_dir, input_signature, output_names, predict_step_signature,
                   preprocessing_step, postprocessing_step_signature, postprocessing_step,
                   variable_initializer)


def export_pipeline(computational_stages, export_dir, iterations, inputs=None,
                    device_mapping=None, pipeline_schedule=None, poplar_options=None,
                    name=None, predict_step_signature=None, input_dataset=None,
                    output_names=None, preprocessing_step=None,
                    preprocessing_step_signature=None, postprocessing_step=None,
                    postprocessing_step_signature=None, purge_export_dir=False):
    """Create a pipelined SavedModel in ``export_dir`` for TensorFlow Serving.

    The computational stages take each infeed element in turn (the first stage also takes
    ``inputs`` first); the last stage's outputs are outfed. ``iterations`` is the pipeline
    depth: the number of elements the executable processes before it restarts. The stages
    run in order on each element, which gives the pipeline's results; ``device_mapping``,
    ``pipeline_schedule`` and ``poplar_options`` are checked as ``pipelining_ops.pipeline``
    checks them.

    Raises:
      ValueError: as ``export_single_step``; ``device_mapping`` or ``poplar_options`` not of
        the stages' length.
    """
    from .pipelining_ops import PipelineSchedule

    export_dir = os.fspath(export_dir)
    _validate_export_dir(export_dir, purge_export_dir)
    stages = list(computational_stages)
    if not stages:
        raise ValueError("computational_stages must hold at least one stage")
    for label, value in (("device_mapping", device_mapping), ("poplar_options", poplar_options)):
        if value is not None and len(value) != len(stages):
            raise ValueError(f"{label} must have the same length as computational_stages "
                             f"({len(stages)}), got {len(value)}")
    if pipeline_schedule is not None and not isinstance(pipeline_schedule, PipelineSchedule):
        raise TypeError(f"pipeline_schedule must be a PipelineSchedule, got "
                        f"{pipeline_schedule!r}")
    first = stages[0]
    _validate_signatures(first, predict_step_signature, input_dataset, preprocessing_step,
                         preprocessing_step_signature, postprocessing_step,
                         postprocessing_step_signature)
    if preprocessing_step is not None:
        input_signature = _prepare_input_signature(preprocessing_step,
                                                   preprocessing_step_signature, input_dataset)
        predict_step_signature = _prepare_input_signature(first, predict_step_signature,
                                                          non_feed_inputs=inputs)
    else:
        input_signature = _prepare_input_signature(first, predict_step_signature,
                                                   input_dataset, non_feed_inputs=inputs)
        predict_step_signature = input_signature
    if postprocessing_step is not None:
        postprocessing_step_signature = _prepare_input_signature(
            postprocessing_step, postprocessing_step_signature)
    fixed = list(inputs or [])
    calls = [_python(s)[0] for s in stages]

    def run_stages(*element):
        out = calls[0](*fixed, *element)
        for call in calls[1:]:
            out = call(*out) if isinstance(out, (list, tuple)) else call(out)
        return out
    loop = _loop(run_stages, predict_step_signature,
                 input_dataset if preprocessing_step is None else None, iterations)
    return _export(loop, export_dir, input_signature, output_names, predict_step_signature,
                   preprocessing_step, postprocessing_step_signature, postprocessing_step)


def export_keras(model, export_dir, batch_size=None, output_names=None,
                 preprocessing_step=None, preprocessing_step_signature=None,
                 postprocessing_step=None, postprocessing_step_signature=None,
                 purge_export_dir=False):
    """Export a Keras model (made inside an IPUStrategy) as a SavedModel for TensorFlow
    Serving: the same as the model's ``export_for_ipu_serving`` method.

    Raises:
      ValueError: the model was not made inside an IPU strategy (it has no
        ``export_for_ipu_serving``); the errors of ``export_for_ipu_serving``.
    """
    if not hasattr(model, "export_for_ipu_serving"):
        raise ValueError("Provided model was not created inside an IPU strategy, so it does "
                         "not contain IPU-specific functions. Please wrap its creation inside "
                         "an IPU strategy.")
    return model.export_for_ipu_serving(export_dir, batch_size, output_names,
                                        preprocessing_step, preprocessing_step_signature,
                                        postprocessing_step, postprocessing_step_signature,
                                        purge_export_dir)


def export_for_ipu_serving(model, export_dir, batch_size=None, output_names=None,
                           preprocessing_step=None, preprocessing_step_signature=None,
                           postprocessing_step=None, postprocessing_step_signature=None,
                           purge_export_dir=False):
    """Export ``model``'s ``call`` in a loop of ``steps_per_execution`` iterations
    (``compile``'s, default 1) at batch size ``batch_size`` (default: the model's own), with
    an infeed, an outfeed and variables frozen to their values, as a SavedModel (Graphcore's
    ``Model.export_for_ipu_serving``; pipelined models compute what their stages compute in
    order). The optional CPU ``preprocessing_step`` feeds the model's inputs and the optional
    ``postprocessing_step`` takes its outputs.

    Returns:
      The exported predict function (the SavedModel's, loaded back).

    Raises:
      ValueError: ``export_dir`` is not empty (without ``purge_export_dir``); the batch size
        is unknown; a step's signature is missing or does not match the model's.
      TypeError: a step signature is not a tuple or list of TensorSpec.
      RuntimeError: the model is not built (its input signature is unknown).
    """
    from ..function import function

    export_dir = os.fspath(export_dir)
    _validate_export_dir(export_dir, purge_export_dir)
    signature = [TensorSpec(s.shape, s.dtype, name=s.name or f"input_{i}")
                 for i, s in enumerate(_keras_input_specs(model, batch_size))]
    iterations = _steps_per_execution(model)

    def predict_step(*xs):
        return model(xs[0] if len(xs) == 1 else list(xs), training=False)

    defunc = function(predict_step, input_signature=signature)
    _validate_signatures(defunc, signature, None, preprocessing_step,
                         preprocessing_step_signature, postprocessing_step,
                         postprocessing_step_signature)
    return export_single_step(
        defunc, export_dir, iterations, output_names=output_names,
        preprocessing_step=preprocessing_step,
        preprocessing_step_signature=preprocessing_step_signature,
        postprocessing_step=postprocessing_step,
        postprocessing_step_signature=postprocessing_step_signature)


def _steps_per_execution(model) -> int:
    spe = getattr(model, "_steps_per_execution", None)
    if spe is None:
        return 1
    value = spe.numpy() if hasattr(spe, "numpy") else spe
    return int(value)


def _keras_input_specs(model, batch_size) -> list:
    """The model's call signature (its inputs, or the shapes it was built with), the batch
    dimension set to ``batch_size`` when given (Graphcore's checks and messages)."""
    inputs = getattr(model, "inputs", None)
    if inputs:
        specs = [(list(t.shape), t.dtype, getattr(t, "name", None)) for t in inputs]
    else:
        shape = getattr(model, "_build_input_shape", None)
        if shape is None:
            raise RuntimeError("Cannot get model's input signature. Please specify the input "
                               "shape using `model.build()` or invoke your model using real "
                               "data.")
        shape = shape.as_list() if hasattr(shape, "as_list") else shape
        shapes = shape if isinstance(shape, (list, tuple)) and shape and not isinstance(
            shape[0], (int, type(None))) else [shape]
        specs = [(list(s.as_list() if hasattr(s, "as_list") else s), "float32", None)
                 for s in shapes]
    out = []
    for shape, dtype, name in specs:
        shape = list(shape)
        if batch_size is not None:
            shape[0] = int(batch_size)
        elif None in shape:
            raise ValueError("Not all dimensions of inputs can be determined. Please specify "
                             "batch size in model's input layer or specify `batch_size` "
                             "parameter when exporting model.")
        out.append(TensorSpec(shape, dtype, name=_param_name(name)))
    return out


def _param_name(name):
    if not name:
        return None
    name = name.split(":")[0].replace("/", "_")
    return name if name.isidentifier() else None
