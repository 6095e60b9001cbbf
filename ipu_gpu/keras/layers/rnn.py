"""Recurrent layers: the cells ``SimpleRNNCell``, ``LSTMCell``, ``GRUCell``, the ``RNN`` layer
that runs a cell over time, ``SimpleRNN``, ``LSTM`` and ``GRU`` (Keras 2's v2 layers), and the
wrappers ``Bidirectional`` and ``TimeDistributed``.

The built-in cells project every timestep's input with one matmul before the loop (what
Keras's fused kernels do), so a step costs the recurrent matmul and the gates. Dropout masks
are drawn once per call, as Keras's: one input mask and one recurrent mask shared by all
gates (Keras's ``implementation=2``; its ``implementation=1`` draws one per gate). At masked
timesteps the states carry over and the output repeats the previous one (zeros with
``zero_output_for_mask=True``), as ``keras.backend.rnn``.
"""

from __future__ import annotations

import inspect

import numpy as np

from ...core.spec import TensorShape, as_shape
from ...core.tensor import Variable
from ...ops import array as _array
from ...ops import creation as _creation
from ...ops import indexing as _idx
from ...ops import math as _m
from ...ops import matmul as _matmul
from ...ops import nn as _nn
from ...ops import random as _random
from ...ops import shape as _shape
from .. import activations, backend, initializers, regularizers
from ..engine import base_layer, call_context
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec
from ..engine.keras_tensor import KerasTensor
from ._graph_shapes import call_on_values, reshape_dims, unknown_dims
from ._weight_args import set_weight_args, weight_args_config

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "SimpleRNN", "SimpleRNNCell",
           "StackedRNNCells", "Bidirectional", "TimeDistributed"]


def _dropout_mask(like, rate, count=1):
    """``count`` dropout masks shaped like ``like`` (ones, dropped and rescaled)."""
    ones = _creation.ones_like(like)
    masks = [_random.dropout(ones, rate) for _ in range(count)]
    return masks if count > 1 else masks[0]


def _unit_forget_bias(bias_initializer, units):
    """An LSTM bias initializer for ``4 * units`` gates i, f, c, o: ``bias_initializer``
    for i, c and o, ones for the forget gate (``unit_forget_bias``)."""

    def init(_, *args, **kwargs):
        return _shape.concat([
            bias_initializer((units,), *args, **kwargs),
            initializers.get("ones")((units,), *args, **kwargs),
            bias_initializer((units * 2,), *args, **kwargs)], 0)

    return init


_CELL_WEIGHTS = ("kernel", "recurrent", "bias")


class _DropoutMasks:
    """Dropout masks of a cell, drawn once per layer call as Keras's ``DropoutRNNCellMixin``:
    ``_mask_count`` for the input and as many for the recurrent state (a list where above
    1). The cell sets ``dropout`` and ``recurrent_dropout``."""

    _mask_count = 1

    def reset_dropout_mask(self):
        self._dropout_mask = self._recurrent_dropout_mask = None

    reset_recurrent_dropout_mask = reset_dropout_mask

    def _masks(self, inputs, h, training):
        """(input mask(s), recurrent mask(s)), each None when that dropout is off."""
        if not training:
            return None, None
        if 0 < self.dropout < 1 and self._dropout_mask is None:
            self._dropout_mask = _dropout_mask(inputs, self.dropout, self._mask_count)
        if 0 < self.recurrent_dropout < 1 and self._recurrent_dropout_mask is None:
            self._recurrent_dropout_mask = _dropout_mask(h, self.recurrent_dropout,
                                                         self._mask_count)
        return self._dropout_mask, self._recurrent_dropout_mask


class _Cell(_DropoutMasks, Layer):
    """Shared by the built-in cells: weights, dropout masks (``_DropoutMasks``) and the fused
    input projection."""

    _n_gates = 1

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, **kwargs):
        if units <= 0:
            raise ValueError("Received an invalid value for argument `units`, expected a "
                             f"positive integer, got {units}.")
        super().__init__(**kwargs)
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        set_weight_args(self, _CELL_WEIGHTS, locals())
        self.dropout = min(1.0, max(0.0, dropout))
        self.recurrent_dropout = min(1.0, max(0.0, recurrent_dropout))
        self.reset_dropout_mask()

    def _add_kernels(self, input_dim):
        gates = self._n_gates * self.units
        self.kernel = self.add_weight(shape=(input_dim, gates), name="kernel",
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(shape=(self.units, gates),
                                                name="recurrent_kernel",
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint)

    def _input_projection(self, x):
        """x @ kernel (+ the input bias), for x of shape (..., input_dim)."""
        lead = tuple(x.shape[:-1])
        out = _matmul.matmul(_shape.reshape(x, (-1, x.shape[-1])), self.kernel)
        bias = self._input_bias()
        if bias is not None:
            out = _nn.bias_add(out, bias)
        return _shape.reshape(out, reshape_dims(lead + (out.shape[-1],)))

    def _input_bias(self):
        return self.bias if self.use_bias else None

    def call(self, inputs, states, training=None):
        """One step: (output, new states) for ``inputs`` of shape (batch, input_dim)."""
        h = states[0] if isinstance(states, (list, tuple)) else states
        dp, rec = self._masks(inputs, h, training)
        if dp is not None:
            inputs = inputs * dp
        return self._step(self._input_projection(inputs), list(states)
                          if isinstance(states, (list, tuple)) else [states], rec)

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        """Zero states: a list for several states, a tensor for one (as Keras)."""
        if batch_size is None:
            batch_size = inputs.shape[0]
        dtype = dtype or (inputs.dtype if inputs is not None else self.compute_dtype)
        if not isinstance(self.state_size, list):
            return _creation.zeros((batch_size, self.state_size), dtype)
        return [_creation.zeros((batch_size, s), dtype) for s in self.state_size]

    def _base_config(self) -> dict:
        config = super().get_config()
        config.update({
            "units": self.units, "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias, **weight_args_config(self, _CELL_WEIGHTS),
            "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
        })
        return config


class SimpleRNNCell(_Cell):
    """``h = activation(x @ kernel + bias + h_prev @ recurrent_kernel)``."""

    def __init__(self, units, **kwargs):
        super().__init__(units, **kwargs)
        self.state_size = self.units
        self.output_size = self.units

    def build(self, input_shape):
        self._add_kernels(as_shape(input_shape)[-1])
        self.bias = self.add_weight(shape=(self.units,), name="bias",
                                    initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.built = True

    def _step(self, xp, states, rec_mask):
        h = states[0]
        if rec_mask is not None:
            h = h * rec_mask
        out = self.activation(xp + _matmul.matmul(h, self.recurrent_kernel))
        return out, [out]

    def get_config(self) -> dict:
        return self._base_config()


class _GatedCell(_Cell):
    """Shared by LSTMCell and GRUCell: gates through ``recurrent_activation``, and Keras's
    ``implementation`` flag (1 where there is recurrent dropout)."""

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 implementation=2, **kwargs):
        super().__init__(units, activation=activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.implementation = 1 if self.recurrent_dropout else implementation
        self.output_size = self.units

    def _gated_config(self, **options) -> dict:
        """The config, with ``options`` between the recurrent activation and the
        implementation (Keras's order)."""
        config = self._base_config()
        config.update(recurrent_activation=activations.serialize(self.recurrent_activation),
                      **options, implementation=self.implementation)
        return config


class LSTMCell(_GatedCell):
    """Long short-term memory (Hochreiter & Schmidhuber 1997) with Keras's gate order
    i, f, c, o; ``unit_forget_bias`` starts the forget-gate bias at 1."""

    _n_gates = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 unit_forget_bias=True, implementation=2, **kwargs):
        super().__init__(units, activation, recurrent_activation, implementation, **kwargs)
        self.unit_forget_bias = unit_forget_bias
        self.state_size = [self.units, self.units]

    def build(self, input_shape):
        self._add_kernels(as_shape(input_shape)[-1])
        if self.use_bias:
            init = self.bias_initializer
            if self.unit_forget_bias:
                init = _unit_forget_bias(self.bias_initializer, self.units)
            self.bias = self.add_weight(shape=(4 * self.units,), name="bias", initializer=init,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        else:
            self.bias = None
        self.built = True

    def _step(self, xp, states, rec_mask):
        h, c = states
        if rec_mask is not None:
            h = h * rec_mask
        z = xp + _matmul.matmul(h, self.recurrent_kernel)
        i, f, cc, o = _shape.split(z, 4, axis=1)
        i, f, o = (self.recurrent_activation(g) for g in (i, f, o))
        c = f * c + i * self.activation(cc)
        h = o * self.activation(c)
        return h, [h, c]

    def get_config(self) -> dict:
        return self._gated_config(unit_forget_bias=self.unit_forget_bias)


class GRUCell(_GatedCell):
    """Gated recurrent unit (Cho et al. 2014) with Keras's gate order z, r, h;
    ``reset_after`` (the default, cuDNN's form) applies the reset gate after the recurrent
    matmul and keeps a separate recurrent bias (bias shape (2, 3 * units))."""

    _n_gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 reset_after=True, implementation=2, **kwargs):
        super().__init__(units, activation, recurrent_activation, implementation, **kwargs)
        self.reset_after = reset_after
        self.state_size = self.units

    def build(self, input_shape):
        self._add_kernels(as_shape(input_shape)[-1])
        if self.use_bias:
            shape = (2, 3 * self.units) if self.reset_after else (3 * self.units,)
            self.bias = self.add_weight(shape=shape, name="bias",
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        else:
            self.bias = None
        self.built = True

    def _input_bias(self):
        if not self.use_bias:
            return None
        return self.bias[0] if self.reset_after else self.bias

    def _step(self, xp, states, rec_mask):
        h = states[0]
        hr = h if rec_mask is None else h * rec_mask
        x_z, x_r, x_h = _shape.split(xp, 3, axis=1)
        u = self.units
        if self.reset_after:
            inner = _matmul.matmul(hr, self.recurrent_kernel)
            if self.use_bias:
                inner = _nn.bias_add(inner, self.bias[1])
            rec_z, rec_r, rec_h = _shape.split(inner, 3, axis=1)
            z = self.recurrent_activation(x_z + rec_z)
            r = self.recurrent_activation(x_r + rec_r)
            hh = self.activation(x_h + r * rec_h)
        else:
            inner = _matmul.matmul(hr, self.recurrent_kernel[:, :2 * u])
            rec_z, rec_r = _shape.split(inner, 2, axis=1)
            z = self.recurrent_activation(x_z + rec_z)
            r = self.recurrent_activation(x_r + rec_r)
            hh = self.activation(x_h + _matmul.matmul(r * hr, self.recurrent_kernel[:, 2 * u:]))
        one = backend._constant_like(1, z)
        out = z * h + (one - z) * hh
        return out, [out]

    def get_config(self) -> dict:
        return self._gated_config(reset_after=self.reset_after)


def _is_multiple_state(size) -> bool:
    return isinstance(size, (list, tuple)) and not isinstance(size, TensorShape)


def _flatten_sizes(size) -> list:
    if _is_multiple_state(size):
        return [s for part in size for s in _flatten_sizes(part)]
    return [size]


def _state_sizes(cell) -> list:
    """The cell's state sizes, flat (a stack's cells' states one after another)."""
    return _flatten_sizes(cell.state_size)


def _flatten_states(states) -> list:
    if isinstance(states, (list, tuple)):
        return [s for part in states for s in _flatten_states(part)]
    return [states]


def _pack_states(size, flat, keep_tuples=False):
    """``flat`` states in the nesting of ``size`` (``tf.nest.pack_sequence_as``): one entry
    per state of a plain cell; per cell of a stack, a list where that cell has several.
    ``keep_tuples`` keeps ``size``'s tuples as tuples."""
    if not _is_multiple_state(size):
        return flat[0]
    packed, i = [], 0
    for part in size:
        n = len(_flatten_sizes(part))
        packed.append(_pack_states(part, flat[i:i + n], keep_tuples))
        i += n
    return tuple(packed) if keep_tuples and isinstance(size, tuple) else packed


def _nest_states(size, flat):
    """``flat`` in the nesting of ``size`` with its containers' types (Keras's
    ``tf.nest.pack_sequence_as(cell.state_size, flat)``: a stack's tuple of its cells')."""
    return _pack_states(size, flat, keep_tuples=True)


def _top_states(cell, flat) -> list:
    """The states an RNN returns with ``return_state``: the flat states, grouped per cell
    for a ``StackedRNNCells`` (as Keras's nested state structure)."""
    size = cell.state_size
    return list(_pack_states(size, flat)) if _is_multiple_state(size) else [flat[0]]


def _output_size(cell):
    if getattr(cell, "output_size", None) is not None:
        return cell.output_size
    return _state_sizes(cell)[0]


class StackedRNNCells(Layer):
    """Runs a list of cells as one cell: each step feeds a cell's output to the next.

    ``state_size`` is the tuple of the cells' state sizes (reversed with
    ``reverse_state_order=True``); ``call`` takes and returns states in that nesting.

    Raises:
      ValueError: a cell without ``call`` or ``state_size``.
    """

    def __init__(self, cells, **kwargs):
        for cell in cells:
            if "call" not in dir(cell):
                raise ValueError("All cells must have a `call` method. received cells:", cells)
            if "state_size" not in dir(cell):
                raise ValueError("All cells must have a `state_size` attribute. received "
                                 "cells:", cells)
        self.cells = list(cells)
        self.reverse_state_order = kwargs.pop("reverse_state_order", False)
        super().__init__(**kwargs)

    def _ordered_cells(self):
        return self.cells[::-1] if self.reverse_state_order else self.cells

    @property
    def state_size(self):
        return tuple(c.state_size for c in self._ordered_cells())

    @property
    def output_size(self):
        return _output_size(self.cells[-1])

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        dtype = dtype or self.compute_dtype
        if batch_size is None:
            batch_size = inputs.shape[0]
        states = []
        for cell in self._ordered_cells():
            if hasattr(cell, "get_initial_state"):
                states.append(cell.get_initial_state(inputs=inputs, batch_size=batch_size,
                                                     dtype=dtype))
            else:
                zeros = [_creation.zeros((batch_size, s), dtype) for s in _state_sizes(cell)]
                states.append(zeros if _is_multiple_state(cell.state_size) else zeros[0])
        return tuple(states)

    def call(self, inputs, states, training=None):
        size = self.state_size
        nested = _pack_states(size, _flatten_states(states))
        if self.reverse_state_order:
            nested = nested[::-1]
        new_states = []
        for cell, cell_states in zip(self.cells, nested):
            if not isinstance(cell_states, (list, tuple)):
                cell_states = [cell_states]
            kwargs = {"training": training} if _takes_training(cell) else {}
            call = cell if callable(cell) else cell.call
            inputs, cell_states = call(inputs, cell_states, **kwargs)
            new_states.append(cell_states)
        if self.reverse_state_order:
            new_states = new_states[::-1]
        return inputs, tuple(_pack_states(size, _flatten_states(new_states)))

    def build(self, input_shape):
        if isinstance(input_shape, list):
            input_shape = input_shape[0]
        shape = as_shape(input_shape).as_list()
        for cell in self.cells:
            if isinstance(cell, Layer) and not cell.built:
                with call_context.name_scope(cell.name):
                    cell._maybe_build(KerasTensor(shape, self.compute_dtype))
            out = _output_size(cell)
            shape = [shape[0]] + (as_shape(out).as_list() if _is_multiple_state(out)
                                  or isinstance(out, TensorShape) else [out])
        self.built = True

    def get_config(self) -> dict:
        from . import serialize

        config = super().get_config()
        config["cells"] = [serialize(cell) for cell in self.cells]
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from . import deserialize

        config = dict(config)
        cells = [deserialize(c, custom_objects=custom_objects) for c in config.pop("cells")]
        return cls(cells, **config)


def _takes_training(cell) -> bool:
    try:
        return "training" in inspect.signature(cell.call).parameters
    except (TypeError, ValueError):
        return False


class RNN(Layer):
    """Runs ``cell`` over the time axis of ``(batch, timesteps, features)`` inputs
    (``(timesteps, batch, features)`` with ``time_major``).

    Args:
      cell: a cell with ``call(inputs, states, training)`` and ``state_size``, or a list of
        cells (run as ``StackedRNNCells``).
      return_sequences: return every step's output, not only the last.
      return_state: also return the final states.
      go_backwards: process the sequence backwards (outputs come in processing order).
      stateful: the last states of a batch are the initial states of the next (needs a
        fixed batch size; ``reset_states`` zeroes them).
      unroll: accepted (the loop always runs in Python).
      time_major: inputs and sequence outputs are (timesteps, batch, ...).
    """

    _shape_inference = True

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, time_major=False, **kwargs):
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not hasattr(cell, "call"):
            raise ValueError("Argument `cell` should have a `call` method. The RNN was passed: "
                             f"cell={cell}")
        if not hasattr(cell, "state_size"):
            raise ValueError("The RNN cell should have a `state_size` attribute (tuple of "
                             f"integers, one integer per RNN state). Received: cell={cell}")
        self.zero_output_for_mask = kwargs.pop("zero_output_for_mask", False)
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.go_backwards = go_backwards
        self.stateful = stateful
        self.unroll = unroll
        self.time_major = time_major
        self.supports_masking = True
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape):
        if isinstance(input_shape, list):
            input_shape = input_shape[0]
        shape = as_shape(input_shape).as_list()
        batch = shape[1] if self.time_major else shape[0]
        if isinstance(self.cell, Layer) and not self.cell.built:
            with call_context.name_scope(self.cell.name):
                self.cell._maybe_build(KerasTensor([batch, shape[-1]], self.compute_dtype))
        if self.stateful:
            if batch is None:
                raise ValueError("If a RNN is stateful, it needs to know its batch size. "
                                 "Specify the batch size of your input tensors.")
            dtype = self.compute_dtype
            object.__setattr__(self, "_states", [
                Variable(_creation.zeros((batch, s), dtype), trainable=False)
                for s in _state_sizes(self.cell)])
        self.built = True

    @property
    def states(self):
        """A stateful RNN's state variables (not weights, as in Keras), in the nesting of
        the cell's ``state_size`` (per cell of a stack; a list for a cell with one state);
        None in their place before a stateful RNN is built, or when it is not stateful."""
        size = self.cell.state_size
        flat = self.__dict__.get("_states") or [None] * len(_state_sizes(self.cell))
        packed = _nest_states(size, flat)
        return packed if _is_multiple_state(size) else [packed]

    @states.setter
    def states(self, value):
        # untracked: states are not weights; kept flat
        object.__setattr__(self, "_states", None if value is None else _flatten_states(value))

    def reset_states(self, states=None):
        """Zero the states of a stateful RNN (or set them to ``states``, flat or nested per
        cell of a stack)."""
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        values = _flatten_states(states) if states is not None else [
            np.zeros(s.shape) for s in self._states]
        for variable, value in zip(self._states, values):
            backend.set_value(variable, value)

    def _initial_states(self, x, initial_state):
        if initial_state is not None:
            states = _flatten_states(initial_state)
            if len(states) != len(_state_sizes(self.cell)):
                raise ValueError(f"Layer {self.name} expects {len(_state_sizes(self.cell))} "
                                 f"state(s), but it received {len(states)} initial state(s). "
                                 f"Input received: {initial_state}")
            return states
        if self.stateful:  # building a TF1 graph: ops read the variables in each run
            building = base_layer._graph_building()
            return [s if building else s.read_value() for s in self._states]
        sizes = _state_sizes(self.cell)
        zeros = call_on_values(
            lambda v: [_creation.zeros((v.shape[0], s), v.dtype) for s in sizes], x)
        return list(zeros)

    def call(self, inputs, mask=None, training=None, initial_state=None):
        if isinstance(mask, list):
            mask = mask[0]
        if self._run_on_values(inputs):
            n = len(self._states) if self.stateful else 0

            def run(x, m, s):  # one flat list: the outputs, then the final states
                output, states = self._run(x, m, training, s)
                return [*(output if isinstance(output, list) else [output]), *states[:n]]
            flat = call_on_values(run, inputs, mask, initial_state, reads=self.weights)
            flat = flat if isinstance(flat, list) else [flat]
            output, states = flat[:len(flat) - n], flat[len(flat) - n:]
            output = output if self.return_state else output[0]
        else:
            output, states = self._run(inputs, mask, training, initial_state)
        if self.stateful:
            self._keep_states(states)
        return output

    def _run_on_values(self, inputs) -> bool:
        """Whether ``call`` unrolls in each run, on its values: a graph tensor's unknown
        length."""
        return unknown_dims(inputs) and inputs.shape[0 if self.time_major else 1] is None

    def _keep_states(self, states) -> None:
        """The final states into the state variables: at once, or in a TF1 graph as update
        ops (``updates``), run when the program runs them, as tf_keras's."""
        ops = [base_layer._graph_assignment(v, "assign", s, None)
               for v, s in zip(self._states, states)]
        if ops and ops[0] is not None:
            self.add_update(ops)
            return
        for variable, state in zip(self._states, states):
            variable.assign(state)

    def _run(self, inputs, mask, training, initial_state):
        """(the call's result, the final states)."""
        x = _shape.transpose(inputs, [1, 0, 2]) if self.time_major else inputs
        if mask is not None and self.time_major:
            mask = _shape.transpose(mask, [1, 0])
        states = self._initial_states(x, initial_state)
        if self.go_backwards:
            x = _array.reverse(x, [1])
            if mask is not None:
                mask = _array.reverse(mask, [1])
        cell = self.cell
        for inner in cell.cells if isinstance(cell, StackedRNNCells) else [cell]:
            if isinstance(inner, _Cell):
                inner.reset_dropout_mask()
        if isinstance(cell, _Cell):
            dp, rec = cell._masks(x[:, 0, :], states[0], training)
            if dp is not None:
                x = x * _shape.expand_dims(dp, 1)
            steps = _array.unstack(cell._input_projection(x), axis=1)

            def step(t, states):
                return cell._step(steps[t], states, rec)
        else:
            steps = _array.unstack(x, axis=1)

            def step(t, states):
                out, new = cell(steps[t], states, training=training) if isinstance(
                    cell, Layer) else cell.call(steps[t], states)
                return out, _flatten_states(new)

        masks = None if mask is None else _array.unstack(
            _shape.expand_dims(_m.cast(mask, "bool"), -1), axis=1)
        outputs, previous = [], None
        for t in range(len(steps)):
            out, new_states = step(t, states)
            if masks is not None:
                keep = masks[t]
                if previous is None:
                    previous = _creation.zeros_like(out)
                fallback = _creation.zeros_like(out) if self.zero_output_for_mask else previous
                out = _idx.where(keep, out, fallback)
                new_states = [_idx.where(keep, n, s) for n, s in zip(new_states, states)]
                previous = out
            states = new_states
            if self.return_sequences:
                outputs.append(out)
        if self.return_sequences:
            output = _shape.stack(outputs, axis=0 if self.time_major else 1)
        else:
            output = out
        if self.return_state:
            return [output, *_top_states(cell, states)], states
        return output, states

    def compute_output_shape(self, input_shape):
        if isinstance(input_shape, list):
            input_shape = input_shape[0]
        dims = as_shape(input_shape).as_list()
        batch, time = (dims[1], dims[0]) if self.time_major else (dims[0], dims[1])
        units = _output_size(self.cell)
        if self.return_sequences:
            out = TensorShape([time, batch, units] if self.time_major else [batch, time, units])
        else:
            out = TensorShape([batch, units])
        if self.return_state:
            shapes = [TensorShape([batch, s]) for s in _state_sizes(self.cell)]
            return [out] + _top_states(self.cell, shapes)
        return out

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, list):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(_top_states(self.cell, _state_sizes(self.cell)))
        return output_mask

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(return_sequences=self.return_sequences, return_state=self.return_state,
                      go_backwards=self.go_backwards, stateful=self.stateful,
                      unroll=self.unroll, time_major=self.time_major)
        if self.zero_output_for_mask:
            config["zero_output_for_mask"] = True
        from . import serialize

        config["cell"] = serialize(self.cell)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from . import deserialize

        config = dict(config)
        cell = deserialize(config.pop("cell"), custom_objects=custom_objects)
        return cls(cell, **config)


_RNN_ARGS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll",
             "time_major", "zero_output_for_mask")
_LAYER_ARGS = ("name", "trainable", "dtype", "input_shape", "batch_input_shape", "input_dim",
               "batch_size", "weights", "activity_regularizer")


class _CellLayer(RNN):
    """SimpleRNN/LSTM/GRU: an RNN whose cell is made from the layer's own arguments."""

    _cell_class = None
    _cell_name = None

    def __init__(self, units, **kwargs):
        layer_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in _RNN_ARGS + _LAYER_ARGS}
        cell = self._cell_class(units, name=self._cell_name, dtype=layer_kwargs.get("dtype"),
                                trainable=layer_kwargs.get("trainable", True), **kwargs)
        super().__init__(cell, **layer_kwargs)

    def __getattr__(self, name):  # units, activation, dropout, ... read through to the cell
        if name.startswith("_") or "cell" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["cell"], name)

    def get_config(self) -> dict:
        config = self.cell.get_config()
        for key in ("name", "trainable", "dtype"):
            config.pop(key, None)
        config.update(super().get_config())
        del config["cell"]
        config["activity_regularizer"] = regularizers.serialize(self.activity_regularizer)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


class SimpleRNN(_CellLayer):
    """A fully connected RNN (``SimpleRNNCell`` over time)."""

    _cell_class, _cell_name = SimpleRNNCell, "simple_rnn_cell"


class LSTM(_CellLayer):
    """Long short-term memory over time (``LSTMCell``)."""

    _cell_class, _cell_name = LSTMCell, "lstm_cell"


class GRU(_CellLayer):
    """Gated recurrent units over time (``GRUCell``; ``reset_after=True`` by default)."""

    _cell_class, _cell_name = GRUCell, "gru_cell"


# ---- wrappers -----------------------------------------------------------------------------------
class Bidirectional(Layer):
    """Runs an RNN forwards and a copy backwards and merges their outputs.

    Args:
      layer: the RNN layer (its copy runs backwards, or ``backward_layer``).
      merge_mode: ``"concat"`` (default), ``"sum"``, ``"mul"``, ``"ave"`` or None (a list).
      weights: accepted and ignored, as Keras 2 does (it stores the halves as the copies'
        ``initial_weights``, which nothing reads: the layers keep their initializers').
      backward_layer: the layer to run backwards (its ``go_backwards`` must be the opposite).

    Raises:
      ValueError: not a layer; an unknown merge mode; a mismatched ``backward_layer``.
    """

    _shape_inference = True

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None,
                 **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `Bidirectional` layer with a "
                             f"`tf.keras.layers.Layer` instance. Received: {layer}")
        if backward_layer is not None and not isinstance(backward_layer, Layer):
            raise ValueError("`backward_layer` need to be a `tf.keras.layers.Layer` instance. "
                             f"Received: {backward_layer}")
        if merge_mode not in ("sum", "mul", "ave", "concat", None):
            raise ValueError(f"Invalid merge mode. Received: {merge_mode}. Merge mode should "
                             'be one of {"sum", "mul", "ave", "concat", None}')
        kwargs.setdefault("trainable", layer.trainable)
        super().__init__(**kwargs)
        from . import serialize

        object.__setattr__(self, "_wrapped", layer)  # untracked: its copies hold the weights
        self._backward_layer_config = (None if backward_layer is None
                                       else serialize(backward_layer))
        self.forward_layer = type(layer).from_config(layer.get_config())
        if backward_layer is None:
            config = layer.get_config()
            config["go_backwards"] = not config["go_backwards"]
            self.backward_layer = type(layer).from_config(config)
        else:
            self.backward_layer = backward_layer
        self.forward_layer._name = "forward_" + self.forward_layer.name
        self.backward_layer._name = "backward_" + self.backward_layer.name
        self._verify_layer_config()
        for twin in (self.forward_layer, self.backward_layer):
            if getattr(twin, "zero_output_for_mask", None) is not None:
                twin.zero_output_for_mask = twin.return_sequences  # masked steps give zeros
        self.merge_mode = merge_mode
        if weights:
            half = len(weights) // 2
            self.forward_layer.initial_weights = weights[:half]
            self.backward_layer.initial_weights = weights[half:]
        self.stateful = layer.stateful
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.supports_masking = True
        self.input_spec = layer.input_spec

    @property
    def layer(self):
        """The layer this wrapper was made from (its weights are unused: ``forward_layer``
        is a fresh copy of it)."""
        return self._wrapped

    def reset_states(self, states=None):
        """Zero both directions' states (or set them: the forward layer's half of
        ``states``, then the backward layer's).

        Raises:
          AttributeError: the layer is not stateful. ValueError: ``states`` not a list."""
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        if states is None:
            self.forward_layer.reset_states()
            self.backward_layer.reset_states()
            return
        if not isinstance(states, (list, tuple)):
            raise ValueError("Unrecognized value for `states`. Expected `states` to be list or "
                             f"tuple. Received: {states}")
        half = len(states) // 2
        self.forward_layer.reset_states(states[:half])
        self.backward_layer.reset_states(states[half:])

    def _verify_layer_config(self):
        fw, bw = self.forward_layer, self.backward_layer
        if fw.go_backwards == bw.go_backwards:
            raise ValueError("Forward layer and backward layer should have different "
                             "`go_backwards` value.forward_layer.go_backwards = "
                             f"{fw.go_backwards},backward_layer.go_backwards = "
                             f"{bw.go_backwards}")
        for a in ("stateful", "return_sequences", "return_state"):
            if getattr(fw, a) != getattr(bw, a):
                raise ValueError("Forward layer and backward layer are expected to have the "
                                 f'same value for attribute "{a}", got "{getattr(fw, a)}" for '
                                 f'forward layer and "{getattr(bw, a)}" for backward layer')

    def build(self, input_shape):
        for layer in (self.forward_layer, self.backward_layer):
            with call_context.name_scope(layer.name):
                layer._maybe_build(KerasTensor(as_shape(input_shape), self.compute_dtype))
        self.built = True

    def call(self, inputs, training=None, mask=None, initial_state=None):
        kwargs = {"training": training, "mask": mask}
        fw_state = bw_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fw_state, bw_state = initial_state[:half], initial_state[half:]
        y = self.forward_layer(inputs, initial_state=fw_state, **kwargs)
        y_rev = self.backward_layer(inputs, initial_state=bw_state, **kwargs)
        states = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            time_axis = 0 if getattr(self.forward_layer, "time_major", False) else 1
            y_rev = _array.reverse(y_rev, [time_axis])
        if self.merge_mode == "concat":
            output = _shape.concat([y, y_rev], -1)
        elif self.merge_mode == "sum":
            output = y + y_rev
        elif self.merge_mode == "ave":
            output = (y + y_rev) * backend._constant_like(0.5, y)
        elif self.merge_mode == "mul":
            output = y * y_rev
        else:
            output = [y, y_rev]
        if self.return_state:
            return (output if isinstance(output, list) else [output]) + states
        return output

    def compute_output_shape(self, input_shape):
        shape = self.forward_layer.compute_output_shape(input_shape)
        states = []
        if self.return_state:
            states = shape[1:] * 2
            shape = shape[0]
        dims = shape.as_list()
        if self.merge_mode == "concat":
            dims[-1] = None if dims[-1] is None else dims[-1] * 2
            out = TensorShape(dims)
        elif self.merge_mode is None:
            out = [shape, shape]
        else:
            out = shape
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + states
        return out

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, list):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.merge_mode is None:
            output_mask = [output_mask, output_mask]
        if self.return_state:
            cell = self.forward_layer.cell
            n_states = 2 * len(_top_states(cell, _state_sizes(cell)))
            masks = output_mask if isinstance(output_mask, list) else [output_mask]
            return masks + [None] * n_states
        return output_mask

    def get_config(self) -> dict:
        config = super().get_config()
        from . import serialize

        config["layer"] = serialize(self.layer)
        config["merge_mode"] = self.merge_mode
        if self._backward_layer_config is not None:
            config["backward_layer"] = self._backward_layer_config
        return config

    @classmethod
    def from_config(cls, config):
        from . import deserialize

        config = dict(config)
        config["layer"] = deserialize(config["layer"])
        if config.get("backward_layer") is not None:
            config["backward_layer"] = deserialize(config["backward_layer"])
        return cls(**config)


class TimeDistributed(Layer):
    """Applies ``layer`` to every timestep (axis 1) of its input.

    Raises:
      ValueError: ``layer`` is not a layer; an input of rank < 3.
    """

    _shape_inference = True

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `TimeDistributed` layer with a "
                             f"`tf.keras.layers.Layer` instance. Received: {layer}")
        super().__init__(**kwargs)
        self.layer = layer
        self.supports_masking = True

    def build(self, input_shape):
        dims = as_shape(input_shape).as_list()
        if len(dims) < 3:
            raise ValueError("`TimeDistributed` Layer should be passed an `input_shape` with at "
                             f"least 3 dimensions, received: {tuple(dims)}")
        self.input_spec = InputSpec(shape=[None, *dims[1:]])
        if not self.layer.built:
            self.layer._maybe_build(KerasTensor([dims[0], *dims[2:]], self.compute_dtype))
        self.built = True

    def call(self, inputs, training=None, mask=None):
        batch, time = inputs.shape[0], inputs.shape[1]
        if None in tuple(inputs.shape)[1:]:  # a graph tensor's unknown time or feature sizes
            return call_on_values(lambda v: self.call(v, training, mask), inputs,
                                  reads=self.weights)
        flat_batch = -1 if batch is None else batch * time  # a graph tensor's unknown batch
        flat = _shape.reshape(inputs, (flat_batch, *inputs.shape[2:]))
        kwargs = {}
        if self.layer._call_spec.expects_training_arg:
            kwargs["training"] = training
        if mask is not None and self.layer._call_spec.expects_mask_arg:
            kwargs["mask"] = _shape.reshape(mask, (flat_batch, *mask.shape[2:]))
        out = self.layer(flat, **kwargs)
        return _shape.reshape(out, reshape_dims((batch, time, *out.shape[1:])))

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        child = as_shape(self.layer.compute_output_shape(
            TensorShape([dims[0], *dims[2:]]))).as_list()
        return TensorShape([child[0], dims[1], *child[1:]])

    def compute_mask(self, inputs, mask=None):
        return mask

    def get_config(self) -> dict:
        from . import serialize

        config = super().get_config()
        config["layer"] = serialize(self.layer)
        return config

    @classmethod
    def from_config(cls, config):
        from . import deserialize

        config = dict(config)
        config["layer"] = deserialize(config["layer"])
        return cls(**config)
