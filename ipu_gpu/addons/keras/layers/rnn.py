"""``PopnnLSTM`` / ``LSTM`` and ``PopnnGRU`` / ``GRU``: the Popnn recurrent layers.

Their weights are Keras's, in Keras's layout and gate order, so ``set_weights`` takes the
weights of a Keras ``LSTM``/``GRU`` unchanged (as Graphcore's own tests do): ``kernel``
(input, gates * units), ``recurrent_kernel`` (units, gates * units) and ``biases`` (gates *
units; (2, 3 * units) for a GRU with ``reset_after``), gates i, f, c, o for the LSTM and z, r,
h for the GRU. The arithmetic is Keras's (the GRU's ``reset_after=False`` form applies the
reset gate to the state before the recurrent matmul), run over time-major inputs.

Graphcore's behaviours kept: ``training`` that is not a Python bool (the default, the
learning phase) counts as training, so input dropout applies when the layer is called without
``training=False``; the input dropout mask is ``ipu.rand_ops.dropout`` with one mask per
sequence shared by every timestep; ``get_config`` holds only the layer's own arguments.
Deliberate differences: under a mixed precision policy the layer runs in the compute dtype
(Graphcore's converts the float16 inputs to the float32 variable dtype, which TensorFlow
refuses); ``partials_dtype`` (PopLibs' accumulation type) is checked but the
arithmetic runs in the layer's dtype; ``options``/``options_bwd`` (PopLibs tuning) are kept
and have no effect; the state variables of a ``stateful`` layer come after the three weights
in ``weights``/``get_weights`` as in Graphcore's layer, but are not trainable (Graphcore's
are plain variables that Keras tracks as trainable weights).
"""

from __future__ import annotations

import collections

import numpy as np

from ipu_gpu.core import dtypes
from ipu_gpu.core.convert import convert_to_tensor
from ipu_gpu.core.spec import as_shape
from ipu_gpu.core.tensor import Variable
from ipu_gpu.ipu import rand_ops
from ipu_gpu.keras import activations, backend, initializers
from ipu_gpu.ops import creation as _creation
from ipu_gpu.ops import math as _m
from ipu_gpu.ops import matmul as _matmul
from ipu_gpu.ops import shape as _shape

from .ipu_layer import IPULayer

__all__ = ["GRU", "LSTM", "PopnnGRU", "PopnnLSTM"]

ACCEPTED_ACTIVATIONS = ["tanh", "relu", "softmax", "sigmoid", "hard_sigmoid"]
ACCEPTED_RECURRENT_ACTIVATIONS = ["tanh", "softmax", "sigmoid", "hard_sigmoid"]

LSTMStateTuple = collections.namedtuple("LSTMStateTuple", ("c", "h"))


def _activation_name(identifier) -> str:
    """Graphcore's ``op_util.get_activation_name``: a name, or the name of a Keras/TF
    activation function."""
    if isinstance(identifier, str):
        return identifier
    if callable(identifier):
        module = getattr(identifier, "__module__", "") or ""
        if not module.startswith("ipu_gpu."):
            raise TypeError(f"Unrecognized function : {module}.{identifier.__name__}")
        return identifier.__name__
    raise TypeError(f"Could not interpret activation function identifier: {identifier!r}")


def _accepted_str(names) -> str:
    return ",".join(f'"{s}"' for s in names)


def _check_args(kind: str, use_bias, regularizers_and_constraints: dict, recurrent_dropout,
                implementation, go_backwards, unroll) -> None:
    """Graphcore's ValueErrors for the Keras arguments Popnn layers do not support."""
    prefix = f"IPU custom {kind} layer does not support"
    if not use_bias:
        raise ValueError(f"{prefix} use_bias = False.")
    for name, value in regularizers_and_constraints.items():
        if value:
            raise ValueError(f"{prefix} {name}.")
    if recurrent_dropout != 0.:
        raise ValueError(f"{prefix} recurrent_dropout." if kind == "LSTM"
                         else f"{prefix} recurrent_dropout != 0.")
    if implementation != 1:
        raise ValueError(f"{prefix} implementation != 1.")
    if go_backwards:
        raise ValueError(f"{prefix} go_backwards = True." if kind == "LSTM"
                         else f"{prefix} go_backwards.")
    if unroll:
        raise ValueError(f"{prefix} unroll = True." if kind == "LSTM" else f"{prefix} unroll.")


# the Keras arguments Popnn layers reject when set, and those they take
_UNSUPPORTED_ARGS = ("kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
                     "activity_regularizer", "kernel_constraint", "recurrent_constraint",
                     "bias_constraint")
_POPNN_ARGS = ("activation", "recurrent_activation", "partials_dtype", "seed",
               "kernel_initializer", "recurrent_initializer", "bias_initializer", "dropout",
               "dropout_seed", "return_state", "return_sequences", "time_major", "stateful",
               "options", "options_bwd")


class _PopnnRNN(IPULayer):
    """Shared by PopnnLSTM and PopnnGRU: arguments, weights, dropout, the time loop."""

    _num_gates_per_layer = 1

    def _init_from_keras_args(self, kind: str, args: dict, reset_after=None) -> None:
        """Initialises a Popnn ``kind`` layer from its Keras-style constructor's ``locals()``
        ``args``: Graphcore's ValueErrors for the Keras arguments Popnn does not support
        (``implementation`` 2 counts as 1), then the Popnn ones (a GRU's ``reset_after``
        set first)."""
        implementation = 1 if args["implementation"] == 2 else args["implementation"]
        _check_args(kind, args["use_bias"], {name: args[name] for name in _UNSUPPORTED_ARGS},
                    args["recurrent_dropout"], implementation, args["go_backwards"],
                    args["unroll"])
        if reset_after is not None:
            self._reset_after = reset_after
        _PopnnRNN.__init__(self, args["units"], **{name: args[name] for name in _POPNN_ARGS},
                           **args["kwargs"])

    def __init__(self, num_units, activation="tanh", recurrent_activation="sigmoid",
                 partials_dtype=dtypes.float32, seed=None, dropout_seed=None,
                 kernel_initializer=None, recurrent_initializer=None, bias_initializer=None,
                 dropout=0., return_state=False, return_sequences=False, time_major=False,
                 stateful=False, options=None, options_bwd=None, **kwargs):
        super().__init__(**kwargs)
        activation = _activation_name(activation)
        recurrent_activation = _activation_name(recurrent_activation)
        if activation not in ACCEPTED_ACTIVATIONS:
            raise ValueError(f"IPU custom RNN layer does not support '{activation}' as an "
                             f"activation. Acceptable value are "
                             f"{_accepted_str(ACCEPTED_ACTIVATIONS)}")
        if recurrent_activation not in ACCEPTED_RECURRENT_ACTIVATIONS:
            raise ValueError(f"IPU custom RNN layer does not support '{recurrent_activation}' "
                             f"as a recurrent activation. Acceptable value are "
                             f"{_accepted_str(ACCEPTED_RECURRENT_ACTIVATIONS)}")
        self._plain_dtype = dtypes.as_dtype(self.dtype or backend.floatx())
        if self._plain_dtype not in (dtypes.float16, dtypes.float32):
            raise ValueError(f"Only support float16, float32, provided {self._plain_dtype}")
        if dtypes.as_dtype(partials_dtype) not in (dtypes.float16, dtypes.float32):
            raise ValueError(f"partials_dtype must be tf.float16 or tf.float32, got "
                             f"{partials_dtype}")
        self._activation = activation
        self._recurrent_activation = recurrent_activation
        self._act = activations.get(activation)
        self._rec_act = activations.get(recurrent_activation)
        self._partials_dtype = partials_dtype
        self._num_units = num_units
        self._dropout = dropout
        self._dropout_seed = dropout_seed
        self._seed = seed
        self._return_state = return_state
        self._return_sequences = return_sequences
        self._time_major = time_major
        self._stateful = stateful
        self._options = {} if options is None else options
        self._options_bwd = {} if options_bwd is None else options_bwd
        self._kernel_initializer = (initializers.GlorotUniform(seed)
                                    if kernel_initializer is None
                                    else initializers.get(kernel_initializer))
        self._recurrent_initializer = (initializers.Orthogonal(seed=seed)
                                       if recurrent_initializer is None
                                       else initializers.get(recurrent_initializer))
        self._bias_initializer = (initializers.Zeros() if bias_initializer is None
                                  else initializers.get(bias_initializer))
        self._input_size = None
        self.states = []

    @property
    def num_units(self):
        return self._num_units

    @property
    def input_size(self):
        self._verify_input_size()
        return self._input_size

    def _verify_input_size(self):
        if not self._input_size:
            raise ValueError(
                "`_input_size` is unknown because the layer has not been built yet.")

    @property
    def canonical_weight_shape(self):
        """Shape of Popnn's combined (input + recurrent) kernel."""
        self._verify_input_size()
        return [self._input_size + self._num_units,
                self._num_units * self._num_gates_per_layer]

    @property
    def canonical_bias_shapes(self):
        """Shape of Popnn's bias."""
        self._verify_input_size()
        return self._canonical_bias_shape(0)

    def _canonical_bias_shape(self, unused_layer):
        return [self._num_gates_per_layer * self._num_units]

    def build(self, input_shape):
        """Create the weights (and a stateful layer's state variables) for inputs of shape
        input_shape (3 dimensions, the last known).

        Raises:
          ValueError: input_shape without 3 dimensions or with an unknown last one.
        """
        if self.built:
            return
        input_shape = as_shape(input_shape)
        if input_shape.ndims != 3:
            raise ValueError(f"Expecting input_shape with 3 dims, got {input_shape.ndims}")
        dims = input_shape.as_list()
        if dims[-1] is None:
            raise ValueError("The last dimension of the inputs to `_PopnnRNN` should be "
                             "defined. Found `None`.")
        self._input_size = dims[-1]
        gates = self._num_units * self._num_gates_per_layer
        self.kernel = self.add_weight("kernel", dtype=self._plain_dtype,
                                      initializer=self._kernel_initializer,
                                      shape=[self._input_size, gates])
        self.recurrent_kernel = self.add_weight("recurrent_kernel", dtype=self._plain_dtype,
                                                initializer=self._recurrent_initializer,
                                                shape=[self._num_units, gates])
        self.biases = self.add_weight("biases", dtype=self._plain_dtype,
                                      initializer=self._bias_init(),
                                      shape=self.canonical_bias_shapes)
        self.states = []
        if self._stateful:
            batch_size = dims[1 if self._time_major else 0]
            shapes = self.state_shape(batch_size)
            shapes = shapes if isinstance(shapes, tuple) else (shapes,)
            self.states = [Variable(np.zeros(shape, self._plain_dtype),
                                    trainable=False, name=f"{self.name}/state_{i}")
                           for i, shape in enumerate(shapes)]
        self.built = True

    def _bias_init(self):
        return self._bias_initializer

    def _run_dtype(self):
        """The layer's dtype; under a mixed precision policy its compute dtype (the weights
        are read in it)."""
        return dtypes.as_dtype(self.compute_dtype or self._plain_dtype)

    def _training(self, training) -> bool:
        if training is None:
            training = backend.learning_phase()
        return training if isinstance(training, bool) else True

    def _prepare(self, inputs, mask, training):
        """Time-major inputs in the layer's dtype, with input dropout when training."""
        self._check_unsupported(mask, "mask", "call")
        inputs = _m.cast(convert_to_tensor(inputs), self._run_dtype())
        if len(inputs.shape) != 3:
            raise ValueError("inputs tensor must be 3D")
        if not self._time_major:
            inputs = _shape.transpose(inputs, [1, 0, 2])
        if self._dropout > 0. and self._training(training):
            noise_shape = list(inputs.shape)
            noise_shape[0] = 1
            inputs = rand_ops.dropout(inputs, seed=self._dropout_seed, rate=self._dropout,
                                      noise_shape=noise_shape, name=self.name + "_dropout")
        return inputs

    def _input_projection(self, inputs, bias):
        """inputs @ kernel + bias for every timestep: a list of (batch, gates) tensors."""
        steps, batch, size = inputs.shape
        flat = _shape.reshape(inputs, [steps * batch, size])
        xp = _m.add(_matmul.matmul(flat, self.kernel), bias)
        xp = _shape.reshape(xp, [steps, batch, xp.shape[-1]])
        if steps == 1:
            return [_shape.reshape(xp, [batch, xp.shape[-1]])]
        return [_shape.reshape(part, [batch, xp.shape[-1]])
                for part in _shape.split(xp, steps, axis=0)]

    def _outputs(self, hs, states):
        """Graphcore's return structure from the per-step outputs and the final states."""
        output = _shape.stack(hs, axis=0)
        last = hs[-1]
        if self._stateful:
            for variable, state in zip(self.states, states):
                variable.assign(_m.cast(state, variable.dtype))
        if not self._time_major:
            output = _shape.transpose(output, [1, 0, 2])
        if not self._return_sequences:
            output = last
        if self._return_state:
            return (output, *states)
        return output

    def _config(self, **extra) -> dict:
        config = {
            "units": self._num_units,
            "activation": self._activation,
            "recurrent_activation": self._recurrent_activation,
            "kernel_initializer": initializers.serialize(self._kernel_initializer),
            "recurrent_initializer": initializers.serialize(self._recurrent_initializer),
            "bias_initializer": initializers.serialize(self._bias_initializer),
        }
        config.update(extra)
        config.update({
            "dropout": self._dropout, "dropout_seed": self._dropout_seed,
            "return_sequences": self._return_sequences, "return_state": self._return_state,
            "stateful": self._stateful, "partials_dtype": self._partials_dtype,
            "seed": self._seed, "time_major": self._time_major,
        })
        return config


class PopnnLSTM(_PopnnRNN):
    """Popnn Long Short-Term Memory layer (Hochreiter & Schmidhuber 1997). Arguments as
    Keras's ``LSTM`` with ``sigmoid`` as the default recurrent activation; the unsupported
    Keras arguments (``use_bias=False``, regularizers, constraints, ``recurrent_dropout``,
    ``implementation`` other than 1 or 2, ``go_backwards``, ``unroll``) raise ValueError.
    Extra: ``dropout_seed`` (a pair of ints for the input dropout), ``partials_dtype``,
    ``seed`` (for the default initializers), ``time_major``, ``options``/``options_bwd``.

    ``call(inputs, training=None, initial_state=None)``: ``initial_state`` is (h, c);
    returns the output (sequence or last), plus h and c with ``return_state``.
    """

    _num_gates_per_layer = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", unit_forget_bias=True, kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0., dropout_seed=None, recurrent_dropout=0., implementation=2,
                 return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, partials_dtype=dtypes.float32, seed=None,
                 time_major=False, options=None, options_bwd=None, **kwargs):
        self._init_from_keras_args("LSTM", locals())
        self.unit_forget_bias = unit_forget_bias

    def _bias_init(self):
        if not self.unit_forget_bias:
            return self._bias_initializer
        units, bias_init = self._num_units, self._bias_initializer

        def init(shape, dtype=None, **kwargs):  # the forget gate's bias starts at one
            value = _shape.concat([bias_init((1, units), dtype=dtype),
                                   initializers.Ones()((1, units), dtype=dtype),
                                   bias_init((2, units), dtype=dtype)], 0)
            return _shape.reshape(value, list(shape))
        return init

    def call(self, inputs, mask=None, training=None, initial_state=None):
        """Run the LSTM over ``inputs`` ((batch, time, input), or (time, batch, input) with
        ``time_major``)."""
        inputs = self._prepare(inputs, mask, training)
        batch = inputs.shape[1]
        if initial_state is not None:
            h, c = initial_state
        elif self._stateful:
            h, c = self.states[0].read_value(), self.states[1].read_value()
        else:
            h, c = self._zero_state(batch)
        h = _m.cast(convert_to_tensor(h), self._run_dtype())
        c = _m.cast(convert_to_tensor(c), self._run_dtype())
        hs = []
        for xp in self._input_projection(inputs, self.biases):
            z = _m.add(xp, _matmul.matmul(h, self.recurrent_kernel))
            i, f, cc, o = _shape.split(z, 4, axis=1)
            i, f, o = self._rec_act(i), self._rec_act(f), self._rec_act(o)
            c = f * c + i * self._act(cc)
            h = o * self._act(c)
            hs.append(h)
        return self._outputs(hs, (h, c))

    def state_shape(self, batch_size):
        """The shapes of the LSTM's two states: ([batch_size, units], [batch_size, units])."""
        return ([batch_size, self.num_units], [batch_size, self.num_units])

    def _zero_state(self, batch_size):
        return LSTMStateTuple(*[_creation.zeros(shape, self._run_dtype())
                                for shape in self.state_shape(batch_size)])

    def get_config(self) -> dict:
        return self._config(unit_forget_bias=self.unit_forget_bias)


class PopnnGRU(_PopnnRNN):
    """Popnn Gated Recurrent Unit (Cho et al. 2014). Arguments as Keras's ``GRU`` (default
    ``reset_after=True``, recurrent activation ``sigmoid``), unsupported ones rejected as in
    ``PopnnLSTM``.

    ``call(inputs, training=None, initial_state=None)``: ``initial_state`` is (batch, units);
    returns the output (sequence or last), plus the final state with ``return_state``.
    """

    _num_gates_per_layer = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.,
                 dropout_seed=None, recurrent_dropout=0., implementation=2,
                 return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, reset_after=True, seed=None,
                 partials_dtype=dtypes.float32, time_major=False, options=None,
                 options_bwd=None, **kwargs):
        self._init_from_keras_args("GRU", locals(), reset_after=reset_after)

    def _canonical_bias_shape(self, unused_layer):
        if self._reset_after:
            return [2, self._num_gates_per_layer * self._num_units]
        return super()._canonical_bias_shape(unused_layer)

    def call(self, inputs, mask=None, training=None, initial_state=None):
        """Run the GRU over ``inputs`` ((batch, time, input), or (time, batch, input) with
        ``time_major``)."""
        inputs = self._prepare(inputs, mask, training)
        if initial_state is not None:
            h = initial_state
        elif self._stateful:
            h = self.states[0].read_value()
        else:
            h = self._zero_state(inputs.shape[1])
        h = _m.cast(convert_to_tensor(h), self._run_dtype())
        u = self._num_units
        if self._reset_after:
            input_bias, recurrent_bias = _shape.split(self.biases, 2, axis=0)
            input_bias = _shape.reshape(input_bias, [3 * u])
            recurrent_bias = _shape.reshape(recurrent_bias, [3 * u])
        else:
            input_bias = self.biases
        rk = self.recurrent_kernel
        hs = []
        for xp in self._input_projection(inputs, input_bias):
            x_z, x_r, x_h = _shape.split(xp, 3, axis=1)
            if self._reset_after:
                inner = _m.add(_matmul.matmul(h, rk), recurrent_bias)
                r_z, r_r, r_h = _shape.split(inner, 3, axis=1)
                z = self._rec_act(x_z + r_z)
                r = self._rec_act(x_r + r_r)
                hh = self._act(x_h + r * r_h)
            else:
                rk_zr, rk_h = _shape.split(rk, [2 * u, u], axis=1)
                r_z, r_r = _shape.split(_matmul.matmul(h, rk_zr), 2, axis=1)
                z = self._rec_act(x_z + r_z)
                r = self._rec_act(x_r + r_r)
                hh = self._act(x_h + _matmul.matmul(r * h, rk_h))
            h = z * h + (backend._constant_like(1, z) - z) * hh
            hs.append(h)
        return self._outputs(hs, (h,))

    def state_shape(self, batch_size):
        """The shape of the GRU's state: [batch_size, units]."""
        return [batch_size, self.num_units]

    def _zero_state(self, batch_size):
        return _creation.zeros(self.state_shape(batch_size), self._run_dtype())

    def get_config(self) -> dict:
        return self._config(reset_after=self._reset_after)


LSTM = PopnnLSTM
GRU = PopnnGRU
