"""Issue 16's Keras surface, item by item, against tf-keras (the Keras 2 oracle).

Every symbol the issue names exists in ``ipu_gpu.keras``; every public argument of each listed
class and function is accepted with tf-keras's default (optimizers against
``tf_keras.optimizers.legacy``, Keras 2.6's OptimizerV2); default-constructed objects give
tf-keras's ``get_config``; the arguments that ours takes through ``**kwargs`` (convolution and
recurrent layers) give tf-keras's config when set to non-default values.

The differences that remain are listed in ``KNOWN`` with the reason beside each: the test fails
when one disappears as well as when a new one appears, so the list stays true.

TensorFlow is imported only through the ``real_tf`` fixture; these tests skip without tf-keras.
"""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import ipu_gpu.keras as ours

SURFACE = {
    "layers": "Input InputLayer Dense Conv1D Conv2D Conv2DTranspose DepthwiseConv2D "
              "SeparableConv2D MaxPooling1D MaxPooling2D MaxPool2D AveragePooling1D "
              "AveragePooling2D GlobalAveragePooling1D GlobalAveragePooling2D GlobalMaxPooling2D "
              "Flatten Reshape Permute RepeatVector Activation ReLU LeakyReLU ELU Softmax Dropout "
              "SpatialDropout2D GaussianNoise BatchNormalization LayerNormalization Embedding "
              "SimpleRNN LSTM GRU Bidirectional TimeDistributed Add Subtract Multiply Average "
              "Concatenate Dot Lambda ZeroPadding2D UpSampling2D Cropping2D MultiHeadAttention "
              "Layer",
    "": "Sequential Model Input",
    "models": "Sequential Model clone_model load_model",
    "losses": "Reduction BinaryCrossentropy CategoricalCrossentropy "
              "SparseCategoricalCrossentropy MeanSquaredError MeanAbsoluteError Huber "
              "binary_crossentropy categorical_crossentropy sparse_categorical_crossentropy mse "
              "mae mean_squared_error mean_absolute_error get serialize deserialize",
    "metrics": "Mean Sum Accuracy SparseCategoricalAccuracy CategoricalAccuracy BinaryAccuracy "
               "TopKCategoricalAccuracy SparseTopKCategoricalAccuracy AUC Precision Recall "
               "MeanSquaredError MeanAbsoluteError get",
    "initializers": "GlorotUniform GlorotNormal HeNormal HeUniform Zeros Ones Constant "
                    "RandomNormal RandomUniform TruncatedNormal Orthogonal VarianceScaling "
                    "glorot_uniform zeros get",
    "regularizers": "l1 l2 l1_l2 L1 L2 L1L2 Regularizer get",
    "constraints": "max_norm non_neg MaxNorm NonNeg Constraint get",
    "activations": "relu sigmoid softmax tanh linear elu selu softplus softsign swish gelu "
                   "exponential hard_sigmoid get serialize deserialize",
    "callbacks": "Callback History ProgbarLogger ModelCheckpoint EarlyStopping "
                 "LearningRateScheduler ReduceLROnPlateau CSVLogger TerminateOnNaN "
                 "LambdaCallback TensorBoard CallbackList BaseLogger",
    "backend": "floatx set_floatx epsilon set_epsilon image_data_format "
               "set_image_data_format clear_session",
    "utils": "to_categorical set_random_seed pad_sequences get_file",
    "preprocessing.sequence": "pad_sequences",
    "mixed_precision": "set_global_policy global_policy Policy LossScaleOptimizer",
    "optimizers": "SGD Adam AdamW RMSprop Adagrad Adadelta Adamax Nadam get",
    "optimizers.schedules": "ExponentialDecay PiecewiseConstantDecay PolynomialDecay "
                            "CosineDecay LearningRateSchedule",
}
ITEMS = [(module, name) for module, names in SURFACE.items() for name in names.split()]

# Arguments ours takes through **kwargs (and forwards to a base class that names them).
_CONV_KW = ("activation use_bias kernel_initializer bias_initializer kernel_regularizer "
            "bias_regularizer activity_regularizer kernel_constraint bias_constraint")
_RNN_KW = ("activation use_bias kernel_initializer recurrent_initializer bias_initializer "
           "kernel_regularizer recurrent_regularizer bias_regularizer activity_regularizer "
           "kernel_constraint recurrent_constraint bias_constraint dropout recurrent_dropout "
           "return_sequences return_state go_backwards stateful unroll")
_OPT_KW = "clipnorm clipvalue global_clipnorm"

# Signature differences from tf-keras: {qualified name: {difference: reason}}.
KNOWN = {
    **{f"layers.{n}": dict.fromkeys((f"kwargs-only {a}" for a in _CONV_KW.split()),
                                    "taken by **kwargs and forwarded to Conv")
       for n in ("Conv1D", "Conv2D", "Conv2DTranspose")},
    "layers.SimpleRNN": dict.fromkeys((f"kwargs-only {a}" for a in _RNN_KW.split()),
                                      "taken by **kwargs and forwarded to the cell and RNN"),
    "layers.LSTM": dict.fromkeys(
        (f"kwargs-only {a}" for a in (_RNN_KW + " recurrent_activation unit_forget_bias "
                                      "time_major").split()),
        "taken by **kwargs and forwarded to the cell and RNN"),
    "layers.GRU": dict.fromkeys(
        (f"kwargs-only {a}" for a in (_RNN_KW + " recurrent_activation time_major "
                                      "reset_after").split()),
        "taken by **kwargs and forwarded to the cell and RNN"),
    "layers.BatchNormalization": dict.fromkeys(
        ("extra renorm", "extra renorm_clipping", "extra renorm_momentum", "extra fused",
         "extra trainable", "extra virtual_batch_size", "extra adjustment", "extra name"),
        "Keras 2.6 names them; tf-keras takes them through **kwargs"),
    "models.load_model": {"missing safe_mode": "tf-keras >= 2.13's .keras format only",
                          "missing **kwargs": "tf-keras >= 2.13",
                          "extra options": "Keras 2.6's SavedModel LoadOptions (accepted)"},
    "activations.serialize": {"missing use_legacy_format": "tf-keras >= 2.13"},
    "activations.deserialize": {"missing use_legacy_format": "tf-keras >= 2.13"},
    "losses.serialize": {"missing use_legacy_format": "tf-keras >= 2.13"},
    "losses.deserialize": {"missing use_legacy_format": "tf-keras >= 2.13"},
    "mixed_precision.LossScaleOptimizer": {
        "missing *args": "tf-keras's metaclass wrapper", "missing **kwargs": "same",
        "extra inner_optimizer": "Keras 2.6's signature", "extra dynamic": "same",
        "extra initial_scale": "same", "extra dynamic_growth_steps": "same"},
    "optimizers.AdamW": dict.fromkeys(
        (f"kwargs-only {a}" for a in (_OPT_KW + " use_ema ema_momentum ema_overwrite_frequency "
                                      "jit_compile").split()),
        "OptimizerV2's **kwargs: Keras 2.6 has no AdamW, tf-keras's is the new optimizer"),
    "optimizers.get": {"missing **kwargs": "tf-keras >= 2.13 (use_legacy_optimizer)"},
}
# Optimizers Keras 2.6 had as OptimizerV2: compared against tf_keras.optimizers.legacy.
LEGACY_OPTIMIZERS = {"SGD", "Adam", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam"}


@pytest.fixture(scope="module")
def tfk(real_tf):
    """tf-keras, imported after TensorFlow's fixture set it up."""
    return pytest.importorskip("tf_keras")


def _lookup(root, module):
    for part in filter(None, module.split(".")):
        root = getattr(root, part)
    return root


def _params(obj) -> dict:
    fn = obj.__init__ if inspect.isclass(obj) else obj
    out = {}
    for name, p in inspect.signature(fn).parameters.items():
        if name == "self":
            continue
        key = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + name
        out[key] = p.default
    return out


def _same_default(a, b) -> bool:
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # arrays and the like
        return repr(a) == repr(b)


def signature_differences(mine, theirs) -> set:
    """The ways ``mine``'s signature departs from ``theirs``'s: ``missing <arg>``,
    ``kwargs-only <arg>`` (ours takes it through **kwargs), ``default <arg>``,
    ``extra <arg>``, ``order`` (tf-keras's parameters in another relative order)."""
    a, b = _params(mine), _params(theirs)
    takes_kwargs = any(k.startswith("**") for k in a)
    out = set()
    for name, default in b.items():
        if name not in a:
            plain = not name.startswith("*")
            out.add(f"kwargs-only {name}" if plain and takes_kwargs else f"missing {name}")
        elif not _same_default(a[name], default):
            out.add(f"default {name}")
    out.update(f"extra {name}" for name in a if name not in b)
    common = [n for n in b if n in a and not n.startswith("*")]
    if [n for n in a if n in common] != common:
        out.add("order")
    return out


@pytest.mark.parametrize("module,name", ITEMS, ids=lambda x: x or "keras")
def test_listed_symbol_exists(module, name):
    assert hasattr(_lookup(ours, module), name), f"keras.{module}.{name} is missing"


@pytest.mark.parametrize("module,name", ITEMS, ids=lambda x: x or "keras")
def test_signature_matches_tf_keras(tfk, module, name):
    mine = getattr(_lookup(ours, module), name)
    if module == "optimizers" and name in LEGACY_OPTIMIZERS:
        theirs = getattr(tfk.optimizers.legacy, name)
    else:
        theirs = getattr(_lookup(tfk, module), name)
    if not callable(mine) or isinstance(mine, type) and issubclass(mine, (int, str)):
        pytest.skip("not a callable")
    try:
        _params(theirs)
    except (TypeError, ValueError):
        pytest.skip("tf-keras's signature is not introspectable")
    assert signature_differences(mine, theirs) == set(KNOWN.get(f"{module}.{name}", ()))


# ---- default configs ---------------------------------------------------------------------------
_LAYER_ARGS = {
    "Dense": (4,), "Conv1D": (2, 3), "Conv2D": (2, 3), "Conv2DTranspose": (2, 3),
    "DepthwiseConv2D": (3,), "SeparableConv2D": (2, 3), "Reshape": ((2, 2),),
    "Permute": ((2, 1),), "RepeatVector": (3,), "Activation": ("relu",), "Dropout": (0.5,),
    "SpatialDropout2D": (0.5,), "GaussianNoise": (0.1,), "Embedding": (10, 3),
    "SimpleRNN": (3,), "LSTM": (3,), "GRU": (3,), "Dot": (1,), "MultiHeadAttention": (2, 4),
}
_CONFIG_LAYERS = [n for n in SURFACE["layers"].split()
                  if n not in ("Input", "Layer", "Lambda", "Bidirectional", "TimeDistributed")]
_CONFIG_KNOWN = {
    ("layers", "SpatialDropout2D"): {
        "data_format": "kept so that channels_first survives a round trip; Keras 2 drops it "
                       "(its constructor takes it, so tf-keras reads our config)"},
    **{("losses", n): {"fn": "tf-keras >= 2.13 adds the wrapped function; Keras 2.6 has no "
                             "'fn'"}
       for n in ("BinaryCrossentropy", "CategoricalCrossentropy",
                 "SparseCategoricalCrossentropy", "MeanSquaredError", "MeanAbsoluteError",
                 "Huber")},
}


def _plain(value):
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _strip(config):
    """``config`` without the keys tf-keras >= 2.13 adds to nested configs."""
    if isinstance(config, dict):
        return {k: _strip(v) for k, v in config.items()
                if k not in ("module", "registered_name")}
    if isinstance(config, list):
        return [_strip(v) for v in config]
    return config


def config_differences(mine: dict, theirs: dict, ignore=()) -> set:
    mine, theirs = _strip(mine), _strip(theirs)
    keys = (set(mine) | set(theirs)) - set(ignore)
    return {k for k in keys if k not in mine or k not in theirs
            or _plain(mine[k]) != _plain(theirs[k])}


@pytest.mark.parametrize("name", _CONFIG_LAYERS)
def test_layer_default_config_matches_tf_keras(tfk, name):
    args = _LAYER_ARGS.get(name, ())
    mine = getattr(ours.layers, name)(*args).get_config()
    theirs = getattr(tfk.layers, name)(*args).get_config()
    assert config_differences(mine, theirs, ignore=("name",)) == set(
        _CONFIG_KNOWN.get(("layers", name), ()))


@pytest.mark.parametrize("name", ["Bidirectional", "TimeDistributed"])
def test_wrapper_default_config_matches_tf_keras(tfk, name):
    inner = ("LSTM", 3) if name == "Bidirectional" else ("Dense", 3)
    mine = getattr(ours.layers, name)(getattr(ours.layers, inner[0])(inner[1])).get_config()
    theirs = getattr(tfk.layers, name)(getattr(tfk.layers, inner[0])(inner[1])).get_config()
    mine["layer"]["config"].pop("name")
    theirs["layer"]["config"].pop("name")
    assert config_differences(mine, theirs, ignore=("name",)) == set()


_CONFIG_OBJECTS = (
    [("metrics", n) for n in SURFACE["metrics"].split() if n != "get"]
    + [("losses", n) for n in ("BinaryCrossentropy", "CategoricalCrossentropy",
                               "SparseCategoricalCrossentropy", "MeanSquaredError",
                               "MeanAbsoluteError", "Huber")]
    + [("initializers", n) for n in SURFACE["initializers"].split()[:12]]
    + [("regularizers", n) for n in ("l1", "l2", "l1_l2", "L1L2")]
    + [("constraints", n) for n in ("MaxNorm", "NonNeg", "max_norm", "non_neg")]
    + [("optimizers", n) for n in sorted(LEGACY_OPTIMIZERS)]
)


@pytest.mark.parametrize("module,name", _CONFIG_OBJECTS)
def test_default_config_matches_tf_keras(tfk, module, name):
    mine = getattr(_lookup(ours, module), name)().get_config()
    lib = tfk.optimizers.legacy if module == "optimizers" else _lookup(tfk, module)
    theirs = getattr(lib, name)().get_config()
    for config in (mine, theirs):  # automatic names count the objects made before
        if isinstance(config.get("name"), str):
            config["name"] = re.sub(r"_\d+$", "", config["name"])
    assert config_differences(mine, theirs) == set(_CONFIG_KNOWN.get((module, name), ()))


# ---- arguments taken through **kwargs, set to non-default values -----------------------------
_WEIGHT_KW = dict(activation="tanh", use_bias=False, kernel_initializer="he_normal",
                  kernel_regularizer="l2", activity_regularizer="l1",
                  kernel_constraint="non_neg")
_RNN_VALUES = dict(_WEIGHT_KW, use_bias=True, bias_initializer="ones",
                   recurrent_initializer="glorot_normal", recurrent_regularizer="l1",
                   bias_regularizer="l2", recurrent_constraint="max_norm",
                   bias_constraint="non_neg", dropout=0.25, recurrent_dropout=0.5,
                   return_sequences=True, return_state=True, go_backwards=True, stateful=True,
                   unroll=True)
KWARGS_CASES = [
    ("Conv1D", (2, 3), _WEIGHT_KW),
    ("Conv2D", (2, 3), dict(_WEIGHT_KW, use_bias=True, bias_initializer="ones",
                            bias_regularizer="l1", bias_constraint="max_norm")),
    ("Conv2DTranspose", (2, 3), _WEIGHT_KW),
    ("SimpleRNN", (3,), _RNN_VALUES),
    ("LSTM", (3,), dict(_RNN_VALUES, recurrent_activation="hard_sigmoid",
                        unit_forget_bias=False, time_major=True)),
    ("GRU", (3,), dict(_RNN_VALUES, recurrent_activation="relu", reset_after=False,
                       time_major=True)),
    ("BatchNormalization", (), dict(momentum=0.9, epsilon=1e-5, fused=False, center=False,
                                    scale=False, axis=1)),
    ("Embedding", (10, 3), dict(mask_zero=True, input_length=4,
                                embeddings_initializer="ones")),
]


@pytest.mark.parametrize("name,args,kwargs", KWARGS_CASES, ids=[c[0] for c in KWARGS_CASES])
def test_non_default_arguments_give_tf_keras_config(tfk, name, args, kwargs):
    mine = getattr(ours.layers, name)(*args, **kwargs).get_config()
    theirs = getattr(tfk.layers, name)(*args, **kwargs).get_config()
    assert config_differences(mine, theirs, ignore=("name",)) == set()
