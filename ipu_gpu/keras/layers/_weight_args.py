"""The initializer, regularizer and constraint arguments of a layer's weights, shared by the
layers that take them: read from the constructor's arguments into attributes, and written
back for ``get_config`` in Keras's key order."""

from __future__ import annotations

from .. import constraints, initializers, regularizers

_KINDS = (("initializer", initializers), ("regularizer", regularizers),
          ("constraint", constraints))


def _names(kind, prefixes, initializers_only) -> tuple:
    """The argument names of one kind; ``initializers_only`` have initializers alone."""
    extra = tuple(initializers_only) if kind == "initializer" else ()
    return tuple(f"{prefix}_{kind}" for prefix in tuple(prefixes) + extra)


def set_weight_args(layer, prefixes, args, initializers_only=(), private=False) -> None:
    """Sets ``layer.<prefix>_initializer``, ``_regularizer`` and ``_constraint`` for each of
    ``prefixes`` (and only ``_initializer`` for ``initializers_only``) from ``args``, the
    constructor's ``locals()``, through ``initializers.get`` and its kin. ``private`` names
    the attributes with a leading underscore (MultiHeadAttention's)."""
    for kind, module in _KINDS:
        for name in _names(kind, prefixes, initializers_only):
            setattr(layer, "_" + name if private else name, module.get(args[name]))


def weight_args_config(layer, prefixes, activity_regularizer=False, initializers_only=(),
                       private=False) -> dict:
    """The serialized arguments that ``set_weight_args`` set, in Keras's ``get_config``
    order: every initializer, every regularizer (then the layer's ``activity_regularizer``
    where asked), every constraint."""
    config = {}
    for kind, module in _KINDS:
        for name in _names(kind, prefixes, initializers_only):
            config[name] = module.serialize(getattr(layer, "_" + name if private else name))
        if kind == "regularizer" and activity_regularizer:
            config["activity_regularizer"] = regularizers.serialize(layer.activity_regularizer)
    return config


def add_kernel_and_bias(layer, last_dim) -> None:
    """Adds a Dense-style ``layer``'s trainable ``kernel`` (``last_dim``, ``units``) and,
    with ``use_bias``, its ``bias`` (``units``,) (else ``bias`` is None), each from the
    initializer, regularizer and constraint that ``set_weight_args`` set."""
    layer.kernel = layer.add_weight("kernel", shape=[last_dim, layer.units],
                                    initializer=layer.kernel_initializer,
                                    regularizer=layer.kernel_regularizer,
                                    constraint=layer.kernel_constraint, dtype=layer.dtype,
                                    trainable=True)
    layer.bias = None
    if layer.use_bias:
        layer.bias = layer.add_weight("bias", shape=[layer.units],
                                      initializer=layer.bias_initializer,
                                      regularizer=layer.bias_regularizer,
                                      constraint=layer.bias_constraint, dtype=layer.dtype,
                                      trainable=True)
