"""``ConvLSTM1D``, ``ConvLSTM2D`` and ``ConvLSTM3D``: LSTMs whose input and recurrent
transformations are convolutions (Shi et al. 2015), as tf-keras's layers.

Inputs are ``(batch, time, *spatial, channels)`` (``channels_last``) or
``(batch, time, channels, *spatial)``; the states ``h`` and ``c`` have the input
convolution's output shape. Gates are i, f, c, o along the kernels' last axis; the input
convolution takes the layer's strides, padding and dilation, the recurrent one stride 1 and
``"same"`` padding. The input convolution of every timestep runs as one convolution before
the loop (per gate where input dropout applies). Dropout masks are drawn once per call, four
for the input and four for the recurrent state (one per gate), as tf-keras's cell draws them;
at masked timesteps the states carry over and the output repeats the previous one.
A stateful layer keeps its final states as the other RNNs: at once, or in a TF1 graph
through update ops (``layer.updates``), each run reading the state variables.
"""

from __future__ import annotations

from ...core.spec import TensorShape, as_shape
from ...core.tensor import Variable
from ...ops import array as _array
from ...ops import conv as _conv
from ...ops import conv3d as _conv3d
from ...ops import creation as _creation
from ...ops import indexing as _idx
from ...ops import math as _m
from ...ops import nn as _nn
from ...ops import shape as _shape
from .. import activations, regularizers
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec
from ..engine.keras_tensor import KerasTensor
from . import conv_utils
from ._graph_shapes import unknown_dims
from ._weight_args import set_weight_args, weight_args_config
from .rnn import RNN, _DropoutMasks, _unit_forget_bias

__all__ = ["ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D"]

_WEIGHTS = ("kernel", "recurrent", "bias")


class ConvLSTMCell(_DropoutMasks, Layer):
    """One ConvLSTM step over ``rank`` spatial axes: ``call(inputs, [h, c], training)``.

    Raises:
      ValueError: a rank above 3; an input without a channel count (at build).
    """

    _mask_count = 4  # one per gate

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, activation="tanh", recurrent_activation="hard_sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        if rank > 3:
            raise ValueError(f"Rank {rank} convolutions are not currently implemented. "
                             f"Received: rank={rank}")
        self.rank = rank
        self.filters = filters
        self.kernel_size = conv_utils.normalize_tuple(kernel_size, rank, "kernel_size")
        self.strides = conv_utils.normalize_tuple(strides, rank, "strides", allow_zero=True)
        self.padding = conv_utils.normalize_padding(padding)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.dilation_rate = conv_utils.normalize_tuple(dilation_rate, rank, "dilation_rate")
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = use_bias
        self.unit_forget_bias = unit_forget_bias
        set_weight_args(self, _WEIGHTS, locals())
        self.dropout = min(1.0, max(0.0, dropout))
        self.recurrent_dropout = min(1.0, max(0.0, recurrent_dropout))
        self.state_size = (self.filters, self.filters)
        self._tf_format = conv_utils.tf_data_format(self.data_format, rank + 2)
        self.reset_dropout_mask()

    @property
    def _channel_axis(self) -> int:
        return 1 if self.data_format == "channels_first" else -1

    def build(self, input_shape):
        input_shape = as_shape(input_shape)
        input_dim = input_shape[self._channel_axis]
        if input_dim is None:
            raise ValueError("The channel dimension of the inputs (last axis) should be "
                             "defined. Found None. Full input shape received: "
                             f"input_shape={input_shape}")
        self.kernel_shape = self.kernel_size + (int(input_dim), self.filters * 4)
        self.kernel = self.add_weight(shape=self.kernel_shape, name="kernel",
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(
            shape=self.kernel_size + (self.filters, self.filters * 4), name="recurrent_kernel",
            initializer=self.recurrent_initializer, regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint)
        self.bias = None
        if self.use_bias:
            init = self.bias_initializer
            if self.unit_forget_bias:
                init = _unit_forget_bias(self.bias_initializer, self.filters)
            self.bias = self.add_weight(shape=(self.filters * 4,), name="bias",
                                        initializer=init, regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    # ---- convolutions ----
    def _conv(self, x, w, strides, padding, dilation):
        if self.rank == 1:
            return _conv.conv1d(x, w, strides[0], padding, data_format=self._tf_format,
                                dilations=dilation[0])
        if self.rank == 2:
            return _conv.conv2d(x, w, list(strides), padding, data_format=self._tf_format,
                                dilations=list(dilation))
        first = self.data_format == "channels_first"
        return _conv3d.conv3d(x, w, [1, 1, *strides] if first else [1, *strides, 1], padding,
                              data_format=self._tf_format,
                              dilations=[1, 1, *dilation] if first else [1, *dilation, 1])

    def input_conv(self, x, w, b=None):
        """``x`` convolved with ``w`` (the layer's strides, padding, dilation), plus ``b``."""
        out = self._conv(x, w, self.strides, self.padding.upper(), self.dilation_rate)
        return out if b is None else _nn.bias_add(out, b, data_format=self._tf_format)

    def recurrent_conv(self, h, w):
        """``h`` convolved with ``w`` (stride 1, 'same' padding)."""
        ones = (1,) * self.rank
        return self._conv(h, w, ones, "SAME", ones)

    def _gate_kernels(self, w):
        return _shape.split(w, 4, axis=self.rank + 1)

    def _project_inputs(self, x, masks):
        """The four gates' input convolutions of ``x``, concatenated on the channel axis
        (one convolution without input dropout; ``masks`` multiply ``x`` per gate)."""
        if masks is None:
            return self.input_conv(x, self.kernel, self.bias)
        biases = _shape.split(self.bias, 4) if self.use_bias else [None] * 4
        return _shape.concat([self.input_conv(x * m, k, b) for m, k, b in zip(
            masks, self._gate_kernels(self.kernel), biases)], self._channel_axis)

    def _step(self, x_gates, states, rec_masks):
        h, c = states
        if rec_masks is None:
            z = x_gates + self.recurrent_conv(h, self.recurrent_kernel)
        else:
            z = x_gates + _shape.concat(
                [self.recurrent_conv(h * m, k) for m, k in zip(
                    rec_masks, self._gate_kernels(self.recurrent_kernel))], self._channel_axis)
        i, f, cc, o = _shape.split(z, 4, axis=self._channel_axis)
        i, f, o = (self.recurrent_activation(g) for g in (i, f, o))
        c = f * c + i * self.activation(cc)
        h = o * self.activation(c)
        return h, [h, c]

    def call(self, inputs, states, training=None):
        """One step: (h, [h, c]) for ``inputs`` of shape (batch, *spatial, channels)."""
        dp, rec = self._masks(inputs, states[0], training)
        return self._step(self._project_inputs(inputs, dp), list(states), rec)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "filters": self.filters, "kernel_size": self.kernel_size, "strides": self.strides,
            "padding": self.padding, "data_format": self.data_format,
            "dilation_rate": self.dilation_rate,
            "activation": activations.serialize(self.activation),
            "recurrent_activation": activations.serialize(self.recurrent_activation),
            "use_bias": self.use_bias,
        })
        weights = weight_args_config(self, _WEIGHTS)
        config.update({k: weights[k] for k in (
            "kernel_initializer", "recurrent_initializer", "bias_initializer")})
        config["unit_forget_bias"] = self.unit_forget_bias
        config.update({k: v for k, v in weights.items() if not k.endswith("initializer")})
        config.update(dropout=self.dropout, recurrent_dropout=self.recurrent_dropout)
        return config


class ConvLSTM(RNN):
    """The ConvLSTM layer over ``rank`` spatial axes (``ConvLSTM1D/2D/3D`` fix the rank).

    Raises:
      TypeError: ``unroll=True`` (not possible with convolutional RNNs, as tf-keras).
      ValueError: a stateful layer without a full input shape (at build); the wrong number
        of initial states.
    """

    _rank = None

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, activation="tanh", recurrent_activation="hard_sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, return_sequences=False,
                 return_state=False, go_backwards=False, stateful=False, dropout=0.0,
                 recurrent_dropout=0.0, **kwargs):
        if kwargs.get("unroll"):
            raise TypeError("Unrolling is not possible with convolutional RNNs. Received: "
                            f"unroll={kwargs['unroll']}")
        cell = ConvLSTMCell(
            self._rank, filters, kernel_size, strides=strides, padding=padding,
            data_format=data_format, dilation_rate=dilation_rate, activation=activation,
            recurrent_activation=recurrent_activation, use_bias=use_bias,
            kernel_initializer=kernel_initializer, recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer, unit_forget_bias=unit_forget_bias,
            kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint, bias_constraint=bias_constraint,
            dropout=dropout, recurrent_dropout=recurrent_dropout, name="conv_lstm_cell",
            dtype=kwargs.get("dtype"))
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, **kwargs)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.input_spec = InputSpec(ndim=self._rank + 3)

    def __getattr__(self, name):  # filters, kernel_size, dropout, ... read through the cell
        if name.startswith("_") or "cell" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["cell"], name)

    # ---- shapes ----
    def _state_shape(self, input_shape) -> list:
        """(batch, *output spatial, filters) in the data format, from the layer's input
        shape (batch, time, ...)."""
        dims = as_shape(input_shape).as_list()
        cell = self.cell
        first = cell.data_format == "channels_first"
        spatial = dims[3:] if first else dims[2:-1]
        out = [conv_utils.conv_output_length(n, k, cell.padding, s, d) for n, k, s, d in zip(
            spatial, cell.kernel_size, cell.strides, cell.dilation_rate)]
        return [dims[0], cell.filters, *out] if first else [dims[0], *out, cell.filters]

    def compute_output_shape(self, input_shape):
        if isinstance(input_shape, list):
            input_shape = input_shape[0]
        dims = as_shape(input_shape).as_list()
        state = self._state_shape(dims)
        output = [state[0], dims[1], *state[1:]] if self.return_sequences else state
        if self.return_state:
            return [TensorShape(output), TensorShape(state), TensorShape(state)]
        return TensorShape(output)

    def build(self, input_shape):
        if isinstance(input_shape, list):
            input_shape = input_shape[0]
        dims = as_shape(input_shape).as_list()
        self.input_spec = InputSpec(shape=(dims[0] if self.stateful else None, None,
                                           *dims[2:]))
        if not self.cell.built:  # no name scope of its own: weights are layer/kernel:0
            self.cell._maybe_build(KerasTensor([dims[0], *dims[2:]], self.compute_dtype))
        if self.stateful:
            state = self._state_shape(dims)
            if None in state:
                raise ValueError(
                    "If a RNN is stateful, it needs to know its batch size. Specify the batch "
                    "size of your input tensors: \n- If using a Sequential model, specify the "
                    "batch size by passing a `batch_input_shape` argument to your first "
                    "layer.\n- If using the functional API, specify the time dimension by "
                    "passing a `batch_shape` argument to your Input layer.\nThe same thing "
                    "goes for the number of rows and columns.")
            object.__setattr__(self, "_states", [
                Variable(_creation.zeros(state, self.compute_dtype), trainable=False)
                for _ in range(2)])
        self.built = True

    @property
    def states(self):
        """A stateful layer's [h, c] variables ([None, None] otherwise)."""
        return list(self.__dict__.get("_states") or [None, None])

    @states.setter
    def states(self, value):
        object.__setattr__(self, "_states", None if value is None else list(value))

    def reset_states(self, states=None):
        """Zero the states of a stateful layer, or set them to ``states`` ([h, c]).

        Raises:
          AttributeError: the layer is not stateful. ValueError: another number of states,
            or a state of another shape (tf-keras's messages).
        """
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        if states is None:
            return super().reset_states()
        if not isinstance(states, (list, tuple)):
            states = [states]
        if len(states) != len(self._states):
            raise ValueError(f"Layer {self.name} expects {len(self._states)} states, but it "
                             f"received {len(states)} state values. States received: {states}")
        for value, variable in zip(states, self._states):
            want = tuple(variable.shape)
            if tuple(value.shape) != want:
                raise ValueError("State {index} is incompatible with layer "  # sic, tf-keras
                                 f"{self.name}: expected shape={want}, found "
                                 f"shape={value.shape}")
        return super().reset_states(states)

    def _initial_states(self, x, initial_state):
        if initial_state is not None or self.stateful:
            return super()._initial_states(x, initial_state)
        return None  # zeros shaped like the first step's gates (known in call)

    # ---- the loop ----
    def _run_on_values(self, inputs) -> bool:
        """A graph tensor's unknown sizes: ``call`` runs on each run's values."""
        return unknown_dims(inputs)

    def _run(self, inputs, mask, training, initial_state):
        """(the call's result, the final states)."""
        cell = self.cell
        cell.reset_dropout_mask()
        states = self._initial_states(inputs, initial_state)
        x = _array.reverse(inputs, [1]) if self.go_backwards else inputs
        if mask is not None and self.go_backwards:
            mask = _array.reverse(mask, [1])
        batch, steps = x.shape[0], x.shape[1]
        step_shape = tuple(x.shape[2:])
        if states is None:
            zeros = _creation.zeros(self._state_shape(inputs.shape), x.dtype)
            states = [zeros, zeros]
        dp, rec = cell._masks(x[:, 0], states[0], training)
        flat = _shape.reshape(x, (batch * steps, *step_shape))
        if dp is not None:  # the same masks at every timestep
            dp = [_shape.reshape(_array.tile(_shape.expand_dims(m, 1),
                                             [1, steps] + [1] * len(step_shape)),
                                 (batch * steps, *step_shape)) for m in dp]
        gates = cell._project_inputs(flat, dp)
        gates = _shape.reshape(gates, (batch, steps, *gates.shape[1:]))
        per_step = _array.unstack(gates, axis=1)
        keeps = None
        if mask is not None:
            keep_shape = (batch,) + (1,) * (len(step_shape))
            keeps = [_shape.reshape(k, keep_shape) for k in _array.unstack(
                _m.cast(mask, "bool"), axis=1)]
        outputs, previous = [], None
        for t in range(steps):
            out, new_states = cell._step(per_step[t], states, rec)
            if keeps is not None:
                if previous is None:
                    previous = _creation.zeros_like(out)
                out = _idx.where(keeps[t], out, previous)
                new_states = [_idx.where(keeps[t], n, s) for n, s in zip(new_states, states)]
                previous = out
            states = new_states
            if self.return_sequences:
                outputs.append(out)
        output = _shape.stack(outputs, axis=1) if self.return_sequences else out
        if self.return_state:
            return [output, *states], states
        return output, states

    def get_config(self) -> dict:
        config = super().get_config()
        del config["cell"]
        cell = self.cell.get_config()
        for key in ("name", "trainable", "dtype"):
            cell.pop(key)
        position = list(cell).index("kernel_constraint")
        items = list(cell.items())
        items.insert(position, ("activity_regularizer",
                                regularizers.serialize(self.activity_regularizer)))
        config.update(items)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


class ConvLSTM1D(ConvLSTM):
    """ConvLSTM over sequences of 1-D inputs ``(batch, time, steps, channels)``."""

    _rank = 1


class ConvLSTM2D(ConvLSTM):
    """ConvLSTM over sequences of images ``(batch, time, rows, cols, channels)``."""

    _rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), activation="tanh", recurrent_activation="hard_sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, return_sequences=False,
                 return_state=False, go_backwards=False, stateful=False, dropout=0.0,
                 recurrent_dropout=0.0, **kwargs):
        args = {k: v for k, v in locals().items() if k not in ("self", "kwargs", "__class__")}
        super().__init__(**args, **kwargs)


class ConvLSTM3D(ConvLSTM):
    """ConvLSTM over sequences of volumes ``(batch, time, depth, rows, cols, channels)``."""

    _rank = 3

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1, 1), activation="tanh", recurrent_activation="hard_sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, return_sequences=False,
                 return_state=False, go_backwards=False, stateful=False, dropout=0.0,
                 recurrent_dropout=0.0, **kwargs):
        args = {k: v for k, v in locals().items() if k not in ("self", "kwargs", "__class__")}
        super().__init__(**args, **kwargs)
