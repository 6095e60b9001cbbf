"""``LocallyConnected1D`` and ``LocallyConnected2D``: convolutions whose weights are not
shared, one filter bank per output position (tf-keras's layers, weights laid out as theirs).

``implementation`` picks the kernel's layout, as tf-keras: 1 holds one
``(kernel positions * channels, filters)`` matrix per output position (``"valid"`` padding
only) and applies it to the gathered input patches; 2 holds a dense input-by-output weight
tensor masked to the connected pairs; 3 holds only the connected pairs' weights, in the
sorted order of their (output, input) flat indices. All three compute the same function;
2 and 3 compute it over the connected pairs only (each pair's input column times its weight,
summed per output: TF's sparse matmul), not as tf-keras's dense masked matmul for 2.
``"same"`` padding connects an output at position ``p`` to inputs
``p * stride - k // 2 .. p * stride + k - k // 2 - 1`` (within the input), tf-keras's rule.
"""

from __future__ import annotations

import itertools

import numpy as np

from ...core.spec import as_shape
from ...ops import indexing as _idx
from ...ops import math_extra as _segments
from ...ops import matmul as _matmul
from ...ops import shape as _shape
from .. import activations, regularizers
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec
from . import conv_utils
from ._weight_args import set_weight_args, weight_args_config

__all__ = ["LocallyConnected1D", "LocallyConnected2D"]


def _connected_ranges(in_spatial, kernel, strides, padding, position):
    """Per spatial axis, the input range connected to the output at ``position``."""
    ranges = []
    for n, k, s, p in zip(in_spatial, kernel, strides, position):
        left = k // 2
        center = p * s + (left if padding == "valid" else 0)
        ranges.append(range(max(0, center - left), min(n, center + k - left)))
    return ranges


def _out_spatial(in_spatial, kernel, strides, padding):
    return tuple(0 if n == 0 else conv_utils.conv_output_length(n, k, padding, s)
                 for n, k, s in zip(in_spatial, kernel, strides))


def _kernel_mask(in_spatial, kernel, strides, padding, channels_first):
    """tf-keras's implementation-2 mask: True where an input and an output position are
    connected, shaped like the implementation-2 kernel with unit channel axes."""
    out_spatial = _out_spatial(in_spatial, kernel, strides, padding)
    mask = np.zeros(tuple(in_spatial) + out_spatial, bool)
    for position in itertools.product(*(range(d) for d in out_spatial)):
        for source in itertools.product(*_connected_ranges(in_spatial, kernel, strides,
                                                           padding, position)):
            mask[source + position] = True
    n = len(in_spatial)
    if channels_first:
        return np.expand_dims(np.expand_dims(mask, 0), -n - 1)
    return np.expand_dims(np.expand_dims(mask, n), -1)


def _kernel_idxs(in_spatial, kernel, strides, padding, c_in, c_out, channels_first):
    """tf-keras's implementation-3 (output, input) flat index pairs, sorted: an (n, 2)
    int64 array."""
    out_spatial = _out_spatial(in_spatial, kernel, strides, padding)
    in_dims = (c_in, *in_spatial) if channels_first else (*in_spatial, c_in)
    out_dims = (c_out, *out_spatial) if channels_first else (*out_spatial, c_out)
    pairs = []
    f_in, f_out = np.meshgrid(np.arange(c_in), np.arange(c_out), indexing="ij")
    f_in, f_out = f_in.ravel(), f_out.ravel()
    for position in itertools.product(*(range(d) for d in out_spatial)):
        for source in itertools.product(*_connected_ranges(in_spatial, kernel, strides,
                                                           padding, position)):
            if channels_first:
                out_idx = np.ravel_multi_index((f_out, *[[p] * len(f_out) for p in position]),
                                               out_dims)
                in_idx = np.ravel_multi_index((f_in, *[[p] * len(f_in) for p in source]),
                                              in_dims)
            else:
                out_idx = np.ravel_multi_index((*[[p] * len(f_out) for p in position], f_out),
                                               out_dims)
                in_idx = np.ravel_multi_index((*[[p] * len(f_in) for p in source], f_in),
                                              in_dims)
            pairs.append(np.stack([out_idx, in_idx], axis=1))
    pairs = np.concatenate(pairs).astype(np.int64)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    return pairs[order]


def _patch_indices(in_spatial, c_in, kernel, strides, out_spatial, channels_first):
    """Implementation 1's (output positions, patch features) indices into a flattened input
    sample: each patch in the input's axis order (channels last or first), as tf-keras's
    ``local_conv``."""
    flat = np.arange(int(np.prod(in_spatial)) * c_in)
    flat = flat.reshape((c_in, *in_spatial) if channels_first else (*in_spatial, c_in))
    rows = []
    for position in itertools.product(*(range(d) for d in out_spatial)):
        window = tuple(slice(p * s, p * s + k) for p, s, k in zip(position, strides, kernel))
        rows.append(flat[(slice(None), *window) if channels_first else window].ravel())
    return np.stack(rows).astype(np.int64)


class _LocallyConnected(Layer):
    """Shared by the 1-D and 2-D layers (``rank`` spatial axes)."""

    _shape_inference = True
    _rank = None

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 implementation=1, **kwargs):
        super().__init__(activity_regularizer=regularizers.get(activity_regularizer),
                         **kwargs)
        rank = self._rank
        self.filters = filters
        self.kernel_size = conv_utils.normalize_tuple(kernel_size, rank, "kernel_size")
        self.strides = conv_utils.normalize_tuple(strides, rank, "strides", allow_zero=True)
        self.padding = conv_utils.normalize_padding(padding)
        if self.padding != "valid" and implementation == 1:
            raise ValueError(f"Invalid border mode for {type(self).__name__} (only \"valid\" "
                             f"is supported if implementation is 1): {padding}")
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        set_weight_args(self, ("kernel", "bias"), locals())
        self.implementation = implementation
        self.input_spec = InputSpec(ndim=rank + 2)

    @property
    def _channels_first(self) -> bool:
        return self.data_format == "channels_first"

    def _split_shape(self, dims):
        """(spatial sizes, channels) of an input shape."""
        if self._channels_first:
            return tuple(dims[2:]), dims[1]
        return tuple(dims[1:-1]), dims[-1]

    def _check_spatial(self, dims, spatial, channels) -> None:
        """tf-keras's errors for undefined sizes (its 1-D layer names the channel axis)."""
        if self._rank == 1 and channels is None:
            raise ValueError("Axis 2 of input should be fully-defined. Found shape:", dims)
        if None in spatial:
            raise ValueError(f"The spatial dimensions of the inputs to  a {type(self).__name__}"
                             " layer should be fully-defined, but layer received the inputs "
                             f"shape {dims}")

    def build(self, input_shape):
        dims = tuple(as_shape(input_shape).as_list())
        spatial, channels = self._split_shape(dims)
        self._check_spatial(dims, spatial, channels)
        out = _out_spatial(spatial, self.kernel_size, self.strides, self.padding)
        if any(d <= 0 for d in out):
            raise ValueError(f"One of the dimensions in the output is <= 0 due to downsampling "
                             f"in {self.name}. Consider increasing the input size. Received "
                             f"input shape {dims} which would produce output shape with a zero "
                             "or negative value in a dimension.")
        self._in_spatial, self._out = spatial, out
        filters, first = self.filters, self._channels_first
        if self.implementation == 1:
            shape = (int(np.prod(out)), int(np.prod(self.kernel_size)) * channels, filters)
            self._patches = _patch_indices(spatial, channels, self.kernel_size, self.strides,
                                           out, first)
        elif self.implementation == 2:
            shape = ((channels, *spatial, filters, *out) if first
                     else (*spatial, channels, *out, filters))
            mask = _kernel_mask(spatial, self.kernel_size, self.strides, self.padding, first)
            in_idx, out_idx = np.nonzero(np.broadcast_to(mask, shape).reshape(
                int(np.prod(spatial)) * channels, -1))
            self._pairs = (out_idx, in_idx, in_idx * (int(np.prod(out)) * filters) + out_idx)
        elif self.implementation == 3:
            idxs = _kernel_idxs(spatial, self.kernel_size, self.strides, self.padding,
                                channels, filters, first)
            self._pairs = (idxs[:, 0], idxs[:, 1], None)
            shape = (len(idxs),)
        else:
            raise ValueError(f"Unrecognized implementation mode: {self.implementation}.")
        self.kernel_shape = shape
        self.kernel = self.add_weight(shape=shape, initializer=self.kernel_initializer,
                                      name="kernel", regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(shape=(*out, filters), initializer=self.bias_initializer,
                                        name="bias", regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.input_spec = InputSpec(ndim=self._rank + 2,
                                    axes={1 if first else -1: channels})
        self.built = True

    def _sample_shape(self):
        """One output sample's shape."""
        return ((self.filters, *self._out) if self._channels_first
                else (*self._out, self.filters))

    def call(self, inputs):
        in_size = int(np.prod(self._in_spatial)) * self._split_shape(inputs.shape)[1]
        flat = _shape.reshape(inputs, (-1, in_size))
        if self.implementation == 1:
            patches = _idx.gather(flat, self._patches, axis=1)  # (batch, positions, features)
            out = _matmul.matmul(_shape.transpose(patches, [1, 0, 2]), self.kernel)
            out = _shape.transpose(out, [1, 2, 0] if self._channels_first else [1, 0, 2])
        else:  # only the connected pairs: (pairs, batch) products summed per output
            out_idx, in_idx, positions = self._pairs
            values = self.kernel if positions is None else _idx.gather(
                _shape.reshape(self.kernel, [-1]), positions)  # the dense kernel's connections
            columns = _idx.gather(_shape.transpose(flat, [1, 0]), in_idx)
            products = columns * _shape.expand_dims(values, 1)
            out = _shape.transpose(_segments.unsorted_segment_sum(
                products, out_idx, int(np.prod(self._out)) * self.filters), [1, 0])
        out = _shape.reshape(out, (-1, *self._sample_shape()))
        if self.use_bias:
            bias_shape = tuple(self.bias.shape)
            target = ((1, bias_shape[-1], *bias_shape[:-1]) if self._channels_first
                      else (1, *bias_shape))
            out = out + _shape.reshape(self.bias, target)  # tf-keras reshapes, not transposes
        return self.activation(out) if self.activation is not None else out

    def compute_output_shape(self, input_shape):
        dims = tuple(as_shape(input_shape).as_list())
        spatial, _ = self._split_shape(dims)
        out = tuple(conv_utils.conv_output_length(n, k, self.padding, s)
                    for n, k, s in zip(spatial, self.kernel_size, self.strides))
        if self._channels_first:
            return as_shape((dims[0], self.filters, *out))
        return as_shape((dims[0], *out, self.filters))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "filters": self.filters, "kernel_size": self.kernel_size, "strides": self.strides,
            "padding": self.padding, "data_format": self.data_format,
            "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
        })
        config.update(weight_args_config(self, ("kernel", "bias"), activity_regularizer=True))
        config["implementation"] = self.implementation
        return config


class LocallyConnected1D(_LocallyConnected):
    """Unshared-weight 1-D convolution over ``(batch, steps, channels)`` (or
    ``(batch, channels, steps)``); kernel and bias ``(output_length, filters)`` per
    ``implementation``.

    Raises:
      ValueError: ``padding`` other than ``"valid"`` with ``implementation=1``; an unknown
        implementation, undefined sizes or an empty output (at build).
    """

    _rank = 1


class LocallyConnected2D(_LocallyConnected):
    """Unshared-weight 2-D convolution over images; bias ``(output_rows, output_cols,
    filters)``.

    Raises:
      ValueError: as ``LocallyConnected1D``.
    """

    _rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 implementation=1, **kwargs):
        args = {k: v for k, v in locals().items() if k not in ("self", "kwargs", "__class__")}
        super().__init__(**args, **kwargs)
