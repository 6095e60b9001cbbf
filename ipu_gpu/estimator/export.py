"""``tf.estimator.export``: what a ``serving_input_receiver_fn`` returns
(``ServingInputReceiver``, ``TensorServingInputReceiver``), ``build_raw_serving_input_receiver_fn``
and the export outputs a ``model_fn`` names (``PredictOutput``, ``ClassificationOutput``,
``RegressionOutput``), and ``export_saved_model``'s work for the Estimator: a fresh graph of
the receiver and the model in PREDICT mode, the checkpoint restored, written with
``saved_model.tf1``'s builder under a timestamped directory (TF 1.15's rules and messages).
"""

from __future__ import annotations

import collections
import os
import shutil
import time

__all__ = ["ClassificationOutput", "EvalOutput", "ExportOutput", "PredictOutput",
           "RegressionOutput", "ServingInputReceiver", "SupervisedInputReceiver",
           "TensorServingInputReceiver", "TrainOutput", "build_raw_serving_input_receiver_fn",
           "build_raw_supervised_input_receiver_fn"]

_SINGLE_FEATURE_KEY, _SINGLE_RECEIVER_KEY = "feature", "input"
DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"
_MAX_DIRECTORY_CREATION_ATTEMPTS = 10


def _is_tensor(x) -> bool:
    from .model_fn import is_tensor

    return is_tensor(x)


def _wrap_and_check(tensors, field, default_key, allow_int_keys=False) -> dict:
    if tensors is None:
        raise ValueError(f"{field}s must be defined.")
    if not isinstance(tensors, dict):
        tensors = {default_key: tensors}
    for name, tensor in tensors.items():
        if not (isinstance(name, str) or (allow_int_keys and isinstance(name, int))):
            kinds = "string or int" if allow_int_keys else "string"
            raise ValueError(f"{field} keys must be {kinds}: {name}.")
        if not _is_tensor(tensor):
            raise ValueError(f"{field} {name} must be a Tensor or SparseTensor.")
    return dict(tensors)


class ServingInputReceiver(collections.namedtuple(
        "ServingInputReceiver", ["features", "receiver_tensors",
                                 "receiver_tensors_alternatives"])):
    """What a ``serving_input_receiver_fn`` returns: the ``features`` the model takes and the
    ``receiver_tensors`` (placeholders) a serving request feeds; a single tensor becomes
    ``{"feature": t}`` / ``{"input": t}``.

    Raises:
      ValueError: features or receiver tensors missing, keys not strings, values not
        tensors (TF's messages)."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        features = _wrap_and_check(features, "feature", _SINGLE_FEATURE_KEY,
                                   allow_int_keys=True)
        receiver_tensors = _wrap_and_check(receiver_tensors, "receiver_tensor",
                                           _SINGLE_RECEIVER_KEY)
        alternatives = {}
        for key, tensors in (receiver_tensors_alternatives or {}).items():
            alternatives[key] = _wrap_and_check(tensors, "receiver_tensors_alternative",
                                                _SINGLE_RECEIVER_KEY)
        return super().__new__(cls, features, receiver_tensors, alternatives or None)


class TensorServingInputReceiver(collections.namedtuple(
        "TensorServingInputReceiver", ["features", "receiver_tensors",
                                       "receiver_tensors_alternatives"])):
    """A receiver for a model taking one tensor (not a dict) as its features."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if features is None:
            raise ValueError("features must be defined.")
        if not _is_tensor(features):
            raise ValueError(f"feature must be a Tensor or SparseTensor, got {features}.")
        receiver = ServingInputReceiver({_SINGLE_FEATURE_KEY: features}, receiver_tensors,
                                        receiver_tensors_alternatives)
        return super().__new__(cls, features, receiver.receiver_tensors,
                               receiver.receiver_tensors_alternatives)


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A ``serving_input_receiver_fn`` whose receiver feeds every feature directly: one
    placeholder per feature of ``features`` (name -> tensor or TensorSpec: its dtype and
    shape, the batch dimension ``default_batch_size``), named after the feature's op (or
    key). A single tensor gives a ``TensorServingInputReceiver``."""
    single = not isinstance(features, dict)
    items = {_SINGLE_FEATURE_KEY: features} if single else dict(features)

    def serving_input_receiver_fn():
        from ..graph.nodes import placeholder

        receivers = {}
        for key, t in items.items():
            shape = t.shape.as_list() if hasattr(t.shape, "as_list") else list(t.shape)
            if shape:
                shape[0] = default_batch_size
            op = getattr(t, "op", None)
            name = getattr(op, "name", None) or getattr(t, "name", None) or key
            receivers[key] = placeholder(t.dtype, shape, name=name.split(":")[0])
        if single:
            return TensorServingInputReceiver(receivers[_SINGLE_FEATURE_KEY],
                                              receivers[_SINGLE_FEATURE_KEY])
        return ServingInputReceiver(receivers, dict(receivers))
    return serving_input_receiver_fn


class SupervisedInputReceiver(collections.namedtuple(
        "SupervisedInputReceiver", ["features", "labels", "receiver_tensors"])):
    """What a TRAIN or EVAL ``input_receiver_fn`` returns: ``features`` and ``labels`` for
    the model, ``receiver_tensors`` a request feeds (single tensors become ``{"feature": t}``,
    ``{"label": t}``, ``{"input": t}``).

    Raises:
      ValueError: as ServingInputReceiver's."""

    def __new__(cls, features, labels, receiver_tensors):
        features = _wrap_and_check(features, "feature", _SINGLE_FEATURE_KEY,
                                   allow_int_keys=True)
        labels = _wrap_and_check(labels, "label", "label", allow_int_keys=True)
        receiver_tensors = _wrap_and_check(receiver_tensors, "receiver_tensor",
                                           _SINGLE_RECEIVER_KEY)
        return super().__new__(cls, features, labels, receiver_tensors)


def build_raw_supervised_input_receiver_fn(features, labels, default_batch_size=None):
    """An ``input_receiver_fn`` for TRAIN/EVAL exports feeding ``features`` and ``labels``
    (tensors or dicts of them) directly: one placeholder each, batch dimension
    ``default_batch_size``.

    Raises:
      ValueError: a feature and a label share a name (TF's message)."""
    f = features if isinstance(features, dict) else {_SINGLE_FEATURE_KEY: features}
    lab = labels if isinstance(labels, dict) else {"label": labels}
    both = set(f) & set(lab)
    if both:
        raise ValueError(f"Features and labels must have distinct names, but {sorted(both)} "
                         "appear in both.")

    def supervised_input_receiver_fn():
        made_f = build_raw_serving_input_receiver_fn(f, default_batch_size)().features
        made_l = build_raw_serving_input_receiver_fn(lab, default_batch_size)().features
        receivers = {**made_f, **made_l}
        return SupervisedInputReceiver(
            made_f if isinstance(features, dict) else made_f[_SINGLE_FEATURE_KEY],
            made_l if isinstance(labels, dict) else made_l["label"], receivers)
    return supervised_input_receiver_fn


# ---- export outputs --------------------------------------------------------------------------
class ExportOutput:
    """What a ``model_fn``'s ``export_outputs`` values are: ``as_signature_def``."""

    def as_signature_def(self, receiver_tensors):
        raise NotImplementedError("ExportOutput is abstract: use PredictOutput, "
                                  "ClassificationOutput or RegressionOutput")


def _output_dict(outputs, default_key) -> dict:
    if not isinstance(outputs, dict):
        outputs = {default_key: outputs}
    for key, value in outputs.items():
        if not isinstance(key, str):
            raise ValueError(f"Prediction output key must be a string; got {key}.")
        if not _is_tensor(value):
            raise ValueError(f"Prediction output value must be a Tensor; got {value}.")
    return dict(outputs)


class PredictOutput(ExportOutput):
    """The predict signature of ``outputs`` (a tensor, named ``output``, or a dict)."""

    def __init__(self, outputs):
        self._outputs = _output_dict(outputs, "output")

    @property
    def outputs(self) -> dict:
        return dict(self._outputs)

    def as_signature_def(self, receiver_tensors):
        from ..saved_model import tf1

        return tf1.predict_signature_def(receiver_tensors, self._outputs)


class ClassificationOutput(ExportOutput):
    """A classification signature (``scores``, ``classes``). Serving it needs one string
    input tensor, which ipu_gpu does not have: ``as_signature_def`` raises ValueError and the
    export leaves the signature out, as TF leaves out an invalid one."""

    def __init__(self, scores=None, classes=None):
        if scores is None and classes is None:
            raise ValueError("At least one of scores and classes must be set.")
        if scores is not None and not _is_tensor(scores):
            raise ValueError(f"Classification scores must be a float32 Tensor; got {scores}")
        if classes is not None and not _is_tensor(classes):
            raise ValueError(f"Classification classes must be a string Tensor; got {classes}")
        self.scores, self.classes = scores, classes

    def as_signature_def(self, receiver_tensors):
        raise ValueError(f"Classification input must be a single string Tensor; got "
                         f"{receiver_tensors}")


class RegressionOutput(ExportOutput):
    """A regression signature (``value``); like ClassificationOutput, it needs a string
    input to be served."""

    def __init__(self, value):
        if not _is_tensor(value):
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value}")
        self.value = value

    def as_signature_def(self, receiver_tensors):
        raise ValueError(f"Regression input must be a single string Tensor; got "
                         f"{receiver_tensors}")


class _SupervisedOutput(ExportOutput):
    """The outputs of a TRAIN or EVAL meta graph: ``loss``, ``predictions`` (``predictions``
    or ``predictions/<key>``) and each metric's ``metrics/<name>/value`` and
    ``metrics/<name>/update_op``."""

    METHOD_NAME = ""

    def __init__(self, loss=None, predictions=None, metrics=None):
        self._outputs = {}
        if loss is not None:
            self._outputs.update(_prefixed(loss, "loss"))
        if predictions is not None:
            self._outputs.update(_prefixed(predictions, "predictions"))
        for name, pair in (metrics or {}).items():
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise ValueError(f"Metrics must be (value, update_op) tuples, got {pair} for "
                                 f"{name}")
            value, update = pair
            self._outputs[f"metrics/{name}/value"] = value
            if _is_tensor(update):
                self._outputs[f"metrics/{name}/update_op"] = update

    @property
    def outputs(self) -> dict:
        return dict(self._outputs)

    def as_signature_def(self, receiver_tensors):
        from ..saved_model import tf1

        return tf1.build_signature_def(
            {k: tf1.build_tensor_info(t) for k, t in receiver_tensors.items()},
            {k: tf1.build_tensor_info(t) for k, t in self._outputs.items()},
            self.METHOD_NAME)


class TrainOutput(_SupervisedOutput):
    """The TRAIN meta graph's outputs (method ``tensorflow/supervised/training``)."""

    METHOD_NAME = "tensorflow/supervised/training"


class EvalOutput(_SupervisedOutput):
    """The EVAL meta graph's outputs (method ``tensorflow/supervised/eval``)."""

    METHOD_NAME = "tensorflow/supervised/eval"


def _prefixed(value, prefix) -> dict:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not _is_tensor(v):
                raise ValueError(f"{prefix} output value must be a Tensor; got {v}.")
            out[f"{prefix}/{k}"] = v
        return out
    if not _is_tensor(value):
        raise ValueError(f"{prefix} output value must be a Tensor; got {value}.")
    return {prefix: value}


def export_outputs_for_predict(export_outputs, predictions) -> dict:
    """TF's rule: None means ``{serving_default: PredictOutput(predictions)}``; one output
    under another key is also the default; several need the default key.

    Raises:
      TypeError: not a dict. ValueError: a value not an ExportOutput; several outputs and
        none is the default (TF's messages)."""
    if export_outputs is None:
        return {DEFAULT_SERVING_SIGNATURE_DEF_KEY: PredictOutput(predictions)}
    if not isinstance(export_outputs, dict):
        raise TypeError(f"export_outputs must be dict, given: {export_outputs}")
    for value in export_outputs.values():
        if not isinstance(value, ExportOutput):
            raise ValueError(f"Values in export_outputs must be ExportOutput objects. "
                             f"Given: {export_outputs}")
    outputs = dict(export_outputs)
    if DEFAULT_SERVING_SIGNATURE_DEF_KEY not in outputs:
        if len(outputs) != 1:
            raise ValueError("Multiple export_outputs were provided, but none of them is "
                             "specified as the default.  Do this by naming one of them with "
                             "signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY.")
        outputs[DEFAULT_SERVING_SIGNATURE_DEF_KEY] = next(iter(outputs.values()))
    return outputs


def signature_defs(receiver_tensors, export_outputs) -> dict:
    """The SignatureDef of each export output that can be served (others are logged and left
    out, as TF's ``build_all_signature_defs``)."""
    from .estimator import _logging

    out = {}
    for key, output in export_outputs.items():
        try:
            out[key] = output.as_signature_def(receiver_tensors)
        except ValueError as e:
            _logging().warning("Export includes no signature %r: %s", key, e)
    return out


def pipeline_predictions(spec, features):
    """The predictions of an IPUPipelineEstimatorSpec's stages run in order on ``features``
    (a dict of them: keyword arguments of the first stage, after the pipeline's ``inputs``):
    the last stage's dict, or its single tensor.

    Raises:
      ValueError: the last stage gives several tensors (Graphcore's message)."""
    args = list(spec.pipeline_op_kwargs.get("inputs") or [])
    kwargs = {}
    if isinstance(features, dict) and all(isinstance(k, str) for k in features):
        kwargs = dict(features)
    else:
        args += list(features) if isinstance(features, (list, tuple)) else [features]
    stages = list(spec.computational_stages)
    outputs = None
    for i, stage in enumerate(stages):
        outputs = stage(*args, **kwargs)
        if i < len(stages) - 1:
            args = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
            kwargs = {}
    if isinstance(outputs, dict):
        return outputs
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    if len(outputs) != 1:
        raise ValueError(f"The last computational stage must return exactly one prediction "
                         f"tensor, but got {len(outputs)}")
    return outputs[0]


# ---- export_saved_model ----------------------------------------------------------------------
def timestamped_export_dir(export_dir_base) -> str:
    """``export_dir_base/<seconds since the epoch>``, waiting a second while it exists.

    Raises:
      RuntimeError: still taken after 10 tries (TF's message)."""
    for _ in range(_MAX_DIRECTORY_CREATION_ATTEMPTS):
        result = os.path.join(os.fspath(export_dir_base), str(int(time.time())))
        if not os.path.exists(result):
            return result
        time.sleep(1)
    raise RuntimeError(f"Failed to obtain a unique export directory name after "
                       f"{_MAX_DIRECTORY_CREATION_ATTEMPTS} attempts.")


def export_saved_model(estimator, export_dir_base, serving_input_receiver_fn,
                       assets_extra=None, checkpoint_path=None, mode="infer"):
    """The Estimator's ``export_saved_model`` (see there); returns the export dir (bytes)."""
    if not serving_input_receiver_fn and mode == "infer":
        raise ValueError("An input_receiver_fn must be defined.")
    return export_all_saved_models(estimator, export_dir_base,
                                   {mode: serving_input_receiver_fn}, assets_extra,
                                   checkpoint_path)


_TAGS = {"train": ["train"], "eval": ["eval"], "infer": ["serve"]}


def export_all_saved_models(estimator, export_dir_base, input_receiver_fn_map,
                            assets_extra=None, checkpoint_path=None):
    """The Estimator's ``experimental_export_all_saved_models``: one meta graph per mode of
    ``input_receiver_fn_map`` (TRAIN, EVAL, PREDICT: tags ``train``, ``eval``, ``serve``),
    the variables saved from the first of them in that order; returns the export dir
    (bytes).

    Raises:
      ValueError: a receiver fn is None; no checkpoint (TF's messages)."""
    from ..saved_model import tf1

    if any(fn is None for fn in input_receiver_fn_map.values()):
        raise ValueError("An input_receiver_fn must be defined.")
    checkpoint_path = checkpoint_path or estimator.latest_checkpoint()
    if not checkpoint_path:
        raise ValueError(f"Couldn't find trained model at {estimator.model_dir}.")
    export_dir = timestamped_export_dir(export_dir_base)
    head, tail = os.path.split(export_dir)
    temp_dir = os.path.join(head, f"temp-{tail}")
    builder = tf1.SavedModelBuilder(temp_dir)
    first = True
    for mode in ("train", "eval", "infer"):
        if mode in input_receiver_fn_map:
            _add_meta_graph_for_mode(estimator, builder, mode, input_receiver_fn_map[mode],
                                     checkpoint_path, first)
            first = False
    builder.save()
    for dest, source in (assets_extra or {}).items():
        target = os.path.join(temp_dir, "assets.extra", dest)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(source, target)
    os.rename(temp_dir, export_dir)
    return export_dir.encode()


def _add_meta_graph_for_mode(estimator, builder, mode, receiver_fn, checkpoint_path,
                             save_variables):
    """Builds ``mode``'s graph of the receiver and the model, restores the checkpoint and
    adds it to ``builder`` (with the variables' values when ``save_variables``). TRAIN and
    EVAL graphs start their metrics' local variables at zero; their train op is not
    written (gradient nodes cannot be)."""
    from ..compat import v1
    from ..graph.saver import Saver
    from .estimator import _keras_names_of_a_new_graph

    with v1.Graph().as_default() as graph:
        estimator._create_global_step(graph)
        if estimator.config.tf_random_seed is not None:
            v1.set_random_seed(estimator.config.tf_random_seed)
        with _keras_names_of_a_new_graph():
            receiver = receiver_fn()
            spec = estimator._call_model_fn_for_export(
                receiver.features, getattr(receiver, "labels", None), mode)
        if mode == "infer":
            outputs = export_outputs_for_predict(getattr(spec, "export_outputs", None),
                                                 spec.predictions)
        else:
            kind = TrainOutput if mode == "train" else EvalOutput
            outputs = {mode: kind(spec.loss, spec.predictions,
                                  getattr(spec, "eval_metric_ops", None))}
        signatures = signature_defs(receiver.receiver_tensors, outputs)
        scaffold = getattr(spec, "scaffold", None)
        saver = getattr(scaffold, "saver", None) or Saver()
        with v1.Session(graph=graph) as sess:
            saver.restore(sess, checkpoint_path)
            sess.run(v1.local_variables_initializer())
            if save_variables:
                builder.add_meta_graph_and_variables(sess, _TAGS[mode],
                                                     signature_def_map=signatures)
            else:
                builder.add_meta_graph(_TAGS[mode], signature_def_map=signatures)
