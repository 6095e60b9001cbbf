"""``EinsumDense`` (a dense layer whose contraction is an einsum equation) and
``MultiHeadAttention`` (Vaswani et al. 2017), as tf-keras builds them: query, key, value and
output projections are EinsumDense sub-layers named ``query``, ``key``, ``value`` and
``attention_output``."""

from __future__ import annotations

import math
import re
import string

import numpy as np

from ...core.spec import TensorShape, as_shape
from ...ops import math as _m
from ...ops import math_extra as _mx
from ...ops import shape as _shape
from .. import activations, backend, regularizers
from ..engine.symbolic import symbolic_shape
from ..engine.base_layer import Layer
from ..engine.call_context import get_mask
from .activation import Softmax
from .regularization import Dropout
from ._graph_shapes import call_on_values
from ._weight_args import set_weight_args, weight_args_config

__all__ = ["EinsumDense", "MultiHeadAttention"]

_CHR_IDX = string.ascii_lowercase


def _analyze_einsum_string(equation, bias_axes, input_shape, output_shape):
    """(kernel shape, bias shape, full output shape) of an EinsumDense (Keras's rules: the
    forms ``X,Y->Z``, ``...X,Y->...Z`` and ``X...,Y->Z...``)."""
    dotted = re.sub(r"\.\.\.", "0", equation)
    for pattern, left in (("([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)", False),
                          ("0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)", True),
                          ("([a-zA-Z]{2,})0,([a-zA-Z]+)->([a-zA-Z]+)0", False)):
        match = re.match(pattern, dotted)
        if match:
            return _analyze_split(match, bias_axes, input_shape, output_shape, left)
    raise ValueError(f"Invalid einsum equation '{equation}'. Equations must be in the form "
                     "[X],[Y]->[Z], ...[X],[Y]->...[Z], or [X]...,[Y]->[Z]....")


def _analyze_split(match, bias_axes, input_shape, output_shape, left_elided):
    input_spec, weight_spec, output_spec = match.group(1), match.group(2), match.group(3)
    elided = len(input_shape) - len(input_spec)
    output_shape = [output_shape] if isinstance(output_shape, int) else list(output_shape)
    output_shape.insert(0, input_shape[0])
    if elided > 0 and left_elided:
        for i in range(1, elided):
            output_shape.insert(1, input_shape[i])
    elif elided > 0:
        output_shape.extend(input_shape[len(input_shape) - elided:])
    if left_elided:
        input_map = {d: i + elided - len(input_shape) for i, d in enumerate(input_spec)}
        output_map = {d: i + elided for i, d in enumerate(output_spec)}
    else:
        input_map = {d: i for i, d in enumerate(input_spec)}
        output_map = {d: i for i, d in enumerate(output_spec)}
    for d in input_spec:
        if d in output_map:
            out = output_shape[output_map[d]]
            if out is not None and out != input_shape[input_map[d]]:
                raise ValueError(f"Input shape and output shape do not match at shared "
                                 f"dimension '{d}'. Input shape is {input_shape[input_map[d]]},"
                                 f" and output shape is {out}.")
    for d in output_spec:
        if d not in input_spec and d not in weight_spec:
            raise ValueError(f"Dimension '{d}' was specified in the output '{output_spec}' but "
                             f"has no corresponding dim in the input spec '{input_spec}' or "
                             f"weight spec '{output_spec}'")
    weight_shape = []
    for d in weight_spec:
        if d in input_map:
            weight_shape.append(input_shape[input_map[d]])
        elif d in output_map:
            weight_shape.append(output_shape[output_map[d]])
        else:
            raise ValueError(f"Weight dimension '{d}' did not have a match in either the input "
                             f"spec '{input_spec}' or the output spec '{output_spec}'. For this "
                             "layer, the weight must be fully specified.")
    bias_shape = None
    if bias_axes is not None:
        offset = elided if left_elided else 0
        sizes = {c: output_shape[i + offset] for i, c in enumerate(output_spec)}
        for c in bias_axes:
            if c not in output_spec:
                raise ValueError(f"Bias dimension '{c}' was requested, but is not part of the "
                                 f"output spec '{output_spec}'")
        first = min(output_spec.find(c) for c in bias_axes)
        bias_shape = [sizes[c] if c in bias_axes else 1 for c in output_spec[first:]]
        if not left_elided:
            bias_shape.extend([1] * elided)
    return weight_shape, bias_shape, output_shape


class EinsumDense(Layer):
    """``activation(einsum(equation, inputs, kernel) + bias)``; the kernel's shape comes from
    the equation, the input shape and ``output_shape`` (without the batch dimension)."""

    _shape_inference = True

    def __init__(self, equation, output_shape, activation=None, bias_axes=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.equation = equation
        self.partial_output_shape = ((output_shape,) if isinstance(output_shape, int)
                                     else tuple(output_shape))
        self.bias_axes = bias_axes
        self.activation = activations.get(activation)
        set_weight_args(self, ("kernel", "bias"), locals())

    def build(self, input_shape):
        input_shape = as_shape(input_shape).as_list()
        kernel_shape, bias_shape, full_output = _analyze_einsum_string(
            self.equation, self.bias_axes, input_shape, self.partial_output_shape)
        self.full_output_shape = tuple(full_output)
        self.kernel = self.add_weight("kernel", shape=kernel_shape,
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, dtype=self.dtype,
                                      trainable=True)
        self.bias = None if bias_shape is None else self.add_weight(
            "bias", shape=bias_shape, initializer=self.bias_initializer,
            regularizer=self.bias_regularizer, constraint=self.bias_constraint,
            dtype=self.dtype, trainable=True)
        self.built = True

    def call(self, inputs):
        ret = _mx.einsum(self.equation, inputs, self.kernel)
        if self.bias is not None:
            ret = ret + self.bias
        if self.activation is not None:
            ret = self.activation(ret)
        return ret

    def compute_output_shape(self, input_shape):
        _, _, full = _analyze_einsum_string(self.equation, self.bias_axes,
                                            as_shape(input_shape).as_list(),
                                            self.partial_output_shape)
        return TensorShape(full)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "output_shape": self.partial_output_shape, "equation": self.equation,
            "activation": activations.serialize(self.activation), "bias_axes": self.bias_axes,
        })
        config.update(weight_args_config(self, ("kernel", "bias"), activity_regularizer=True))
        return config


def _build_attention_equation(rank, attn_axes):
    """Einsum equations for q.k scores and for combining scores with values, attention over
    ``attn_axes`` of rank-``rank`` projected tensors (batch, ..., heads, channels)."""
    target = _CHR_IDX[:rank]
    batch_dims = tuple(np.delete(range(rank), attn_axes + (rank - 1,)))
    offset, source = rank, ""
    for i in range(rank):
        if i in batch_dims or i == rank - 1:
            source += target[i]
        else:
            source += _CHR_IDX[offset]
            offset += 1
    product = "".join([target[i] for i in batch_dims] + [target[i] for i in attn_axes]
                      + [source[i] for i in attn_axes])
    return f"{source},{target}->{product}", f"{product},{source}->{target}", len(product)


def _build_proj_equation(free_dims, bound_dims, output_dims):
    input_str = kernel_str = output_str = bias_axes = ""
    for i in range(free_dims):
        input_str += _CHR_IDX[i]
        output_str += _CHR_IDX[i]
    for i in range(bound_dims):
        input_str += _CHR_IDX[free_dims + i]
        kernel_str += _CHR_IDX[free_dims + i]
    for i in range(output_dims):
        char = _CHR_IDX[free_dims + bound_dims + i]
        kernel_str += char
        output_str += char
        bias_axes += char
    return f"{input_str},{kernel_str}->{output_str}", bias_axes, len(output_str)


def _output_shape(output_rank, known_last_dims):
    return [None] * (output_rank - len(known_last_dims)) + list(known_last_dims)


def _causal_mask(query, value):
    """The (1, T, S) lower-triangular mask of ``use_causal_mask``."""
    t, s = query.shape[1], value.shape[1]
    return backend._constant_like(np.tril(np.ones((1, t, s), bool)), query, dtype=bool)


class MultiHeadAttention(Layer):
    """Multi-head attention: ``num_heads`` scaled dot-product attentions of projected query,
    key and value, concatenated and projected back.

    Args:
      num_heads, key_dim: heads and the size of each query/key head.
      value_dim: the size of each value head (default ``key_dim``).
      dropout: dropout on the attention probabilities (in training).
      use_bias: biases in the projections.
      output_shape: the output's last dimension(s) (default: the query's).
      attention_axes: the axes attention runs over (default: all but batch, heads, channels).

    ``call(query, value, key=None, attention_mask=None, return_attention_scores=False,
    training=None, use_causal_mask=False)``; the inputs' Keras masks and ``use_causal_mask``
    combine with ``attention_mask`` as in tf-keras.
    """

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 softmax_robust_masking=False, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self._num_heads = num_heads
        self._key_dim = key_dim
        self._value_dim = value_dim if value_dim else key_dim
        self._dropout = dropout
        self._use_bias = use_bias
        self._output_shape = output_shape
        set_weight_args(self, ("kernel", "bias"), locals(), private=True)
        self._activity_regularizer = regularizers.get(activity_regularizer)
        self._softmax_robust_masking = softmax_robust_masking
        if attention_axes is not None and not isinstance(attention_axes, (list, tuple)):
            attention_axes = (attention_axes,)
        self._attention_axes = attention_axes
        self._built_from_signature = False
        self._query_shape = self._key_shape = self._value_shape = None

    def _common_kwargs(self) -> dict:
        return dict(kernel_regularizer=self._kernel_regularizer,
                    bias_regularizer=self._bias_regularizer,
                    activity_regularizer=self._activity_regularizer,
                    kernel_constraint=self._kernel_constraint,
                    bias_constraint=self._bias_constraint, dtype=self._dtype_policy,
                    kernel_initializer=type(self._kernel_initializer).from_config(
                        self._kernel_initializer.get_config()),
                    bias_initializer=type(self._bias_initializer).from_config(
                        self._bias_initializer.get_config()))

    def _build_from_signature(self, query, value, key=None):
        """Create the projection sub-layers for these input shapes (on the first call)."""
        self._built_from_signature = True

        def shape_of(x):  # a stand-in of a functional call gives its KerasTensor's shape
            return as_shape(list(symbolic_shape(x)) if hasattr(x, "shape") else x)

        self._query_shape, self._value_shape = shape_of(query), shape_of(value)
        self._key_shape = self._value_shape if key is None else shape_of(key)
        free_dims = self._query_shape.rank - 1
        eq, bias_axes, rank = _build_proj_equation(free_dims, 1, 2)
        self._query_dense = EinsumDense(
            eq, output_shape=_output_shape(rank - 1, [self._num_heads, self._key_dim]),
            bias_axes=bias_axes if self._use_bias else None, name="query",
            **self._common_kwargs())
        eq, bias_axes, rank = _build_proj_equation(self._key_shape.rank - 1, 1, 2)
        self._key_dense = EinsumDense(
            eq, output_shape=_output_shape(rank - 1, [self._num_heads, self._key_dim]),
            bias_axes=bias_axes if self._use_bias else None, name="key",
            **self._common_kwargs())
        eq, bias_axes, rank = _build_proj_equation(self._value_shape.rank - 1, 1, 2)
        self._value_dense = EinsumDense(
            eq, output_shape=_output_shape(rank - 1, [self._num_heads, self._value_dim]),
            bias_axes=bias_axes if self._use_bias else None, name="value",
            **self._common_kwargs())
        self._build_attention(rank)
        out = self._output_shape
        out = ([out] if not isinstance(out, (list, tuple)) else list(out)) if out else \
            [self._query_shape[-1]]
        eq, bias_axes, rank = _build_proj_equation(free_dims, 2, len(out))
        self._output_dense = EinsumDense(eq, output_shape=_output_shape(rank - 1, out),
                                         bias_axes=bias_axes if self._use_bias else None,
                                         name="attention_output", **self._common_kwargs())

    def _build_attention(self, rank):
        if self._attention_axes is None:
            self._attention_axes = tuple(range(1, rank - 2))
        else:
            self._attention_axes = tuple(self._attention_axes)
        self._dot_product_equation, self._combine_equation, scores_rank = \
            _build_attention_equation(rank, self._attention_axes)
        norm_axes = tuple(range(scores_rank - len(self._attention_axes), scores_rank))
        self._softmax = Softmax(axis=norm_axes, robust_masking=self._softmax_robust_masking,
                                dtype=self._dtype_policy)
        self._dropout_layer = Dropout(rate=self._dropout, dtype=self._dtype_policy)

    def _masked_softmax(self, scores, attention_mask=None):
        if attention_mask is not None:
            axis = -len(self._attention_axes) * 2 - 1
            for _ in range(scores.ndim - attention_mask.ndim):
                attention_mask = _shape.expand_dims(attention_mask, axis)
        return self._softmax(scores, attention_mask)

    def _compute_attention(self, query, key, value, attention_mask=None, training=None):
        query = query * backend._constant_like(1.0 / math.sqrt(float(self._key_dim)), query)
        scores = _mx.einsum(self._dot_product_equation, key, query)
        scores = self._masked_softmax(scores, attention_mask)
        dropped = self._dropout_layer(scores, training=training)
        return _mx.einsum(self._combine_equation, dropped, value), scores

    def _compute_attention_mask(self, query, value, key=None, attention_mask=None,
                                use_causal_mask=False):
        auto = None
        for x, axis in ((query, 2), (value, 1), (key, 1)):
            m = get_mask(x)
            if m is not None:
                m = _shape.expand_dims(_m.cast(m, "bool"), axis)
                auto = m if auto is None else _m.logical_and(auto, m)
        if use_causal_mask:
            causal = call_on_values(_causal_mask, query, value)
            auto = causal if auto is None else _m.logical_and(auto, causal)
        if auto is not None:
            attention_mask = auto if attention_mask is None else _m.logical_and(
                _m.cast(attention_mask, "bool"), auto)
        return attention_mask

    def call(self, query, value, key=None, attention_mask=None, return_attention_scores=False,
             training=None, use_causal_mask=False):
        if not self._built_from_signature:
            self._build_from_signature(query=query, value=value, key=key)
        if key is None:
            key = value
        attention_mask = self._compute_attention_mask(query, value, key, attention_mask,
                                                      use_causal_mask)
        query = self._query_dense(query)
        key = self._key_dense(key)
        value = self._value_dense(value)
        output, scores = self._compute_attention(query, key, value, attention_mask, training)
        output = self._output_dense(output)
        if return_attention_scores:
            return output, scores
        return output

    def compute_mask(self, inputs, mask=None):
        return mask[0] if isinstance(mask, (list, tuple)) else mask

    def get_config(self) -> dict:
        def shape(s):
            return None if s is None else tuple(s.as_list())

        config = super().get_config()
        config.update({
            "num_heads": self._num_heads, "key_dim": self._key_dim,
            "value_dim": self._value_dim, "dropout": self._dropout,
            "use_bias": self._use_bias, "output_shape": self._output_shape,
            "attention_axes": self._attention_axes,
            **weight_args_config(self, ("kernel", "bias"), activity_regularizer=True,
                                 private=True),
            "query_shape": shape(self._query_shape), "key_shape": shape(self._key_shape),
            "value_shape": shape(self._value_shape),
            "softmax_robust_masking": self._softmax_robust_masking,
        })
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        shapes = [config.pop(k, None) for k in ("query_shape", "key_shape", "value_shape")]
        layer = cls(**config)
        if None not in shapes:
            layer._build_from_signature(shapes[0], shapes[2], shapes[1])
        return layer
