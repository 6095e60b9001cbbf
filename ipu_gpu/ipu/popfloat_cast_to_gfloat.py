"""``tensorflow.python.ipu.popfloat_cast_to_gfloat`` (Graphcore's experimental
``ipu.ops.experimental.popfloat_cast_to_gfloat``): ``GenericFloat``, PopFloat's casts between
the native float types and generic float formats of any mantissa/exponent size, bias,
denormal and Inf/NaN support.

The values are those of the format (``ipu_gpu.ops.gfloat`` describes the grid, the rounding
modes, overflow and the packed layout). Formats of fewer than 16 bits whose values are not a
native type are stored packed in int8/int16 (``is_packed_float``); ``cast_gfloat_to_native``
unpacks them. Stochastic rounding ('SR'; 'SX' is the same) draws its noise from
``tf.random`` (the IPU's hardware generator cannot be reproduced) with the ``sr_density``
densities of PopFloat: 'Invalid' (plain), 'Uniform', 'Normal', 'TruncatedNormal', 'Laplace',
'TruncatedLaplace', 'Logistic', 'TruncatedLogistic', 'LogitNormal', 'TruncatedLogitNormal'
(``ipu_gpu.ops.gfloat_noise`` defines each from ``sr_norm_offset``, ``sr_norm_scale``,
``sr_norm_min``, ``sr_norm_max``, resolved to ``sr_bits`` bits) and 'Bernoulli' (round down
with probability ``sr_prob``). A stochastic cast gives one of the two representable values
around each input, and leaves representable inputs unchanged. Graphcore's packed bit layout
and the internal parameter vector of its codelets are not documented and not reproduced; the
gradient of both casts passes straight through, as Graphcore registers it.
"""

from __future__ import annotations

import numpy as np

from ipu_gpu.core import dtypes
from ipu_gpu.ops import array as array_ops
from ipu_gpu.ops import gfloat, gfloat_noise
from ipu_gpu.ops import math as math_ops
from ipu_gpu.ops import random as random_ops

__all__ = ["GenericFloat"]


class GenericFloat:
    """A generic float format and the casts to and from it.

    Args:
      man: mantissa bits.
      exp: exponent bits.
      bias: exponent bias.
      en_denorm: enable denormal values.
      en_inf: keep the all-ones exponent for Inf and NaN (needs ``exp > 0``).
      calc_type: 'auto', 'fp16' or 'fp32': the native type the cast computes in.
      name: unused (Graphcore's variable-scope name).

    Raises:
      RuntimeError: a calculation type that cannot represent the format (Graphcore's
        messages).
      ValueError: ``exp`` outside [1, 8] or ``man`` outside [0, 23].
    """

    def __init__(self, man=10, exp=5, bias=15, en_denorm=True, en_inf=True, calc_type="auto",
                 name=None):
        if not 1 <= int(exp) <= 8 or not 0 <= int(man) <= 23:
            raise ValueError(f"GenericFloat: exp must be in [1, 8] and man in [0, 23], got "
                             f"exp={exp}, man={man}")
        self._gfloat_calc_spec_dtype = calc_type
        self._man, self._exp, self._bias = int(man), int(exp), int(bias)
        self._en_denorm = bool(en_denorm)
        self._en_inf = bool(en_inf) and self._exp > 0
        self._packed_bits = self._exp + self._man
        self._name = name
        self._is_set = None
        self._gfloat_as_int = False
        self.set_param()

    def set_param(self) -> None:
        """Work out the format's storage, native and calculation types."""
        if self._is_set is not None:
            return
        flags = int(self._en_denorm) | (int(self._en_inf) << 1)
        self._gfloat_packed_params = (self._man | (self._exp << 8) | ((self._bias & 255) << 16)
                                      | (flags << 24))
        self._is_set = True
        self._gfloat_as_int = False
        man, exp = self._man, self._exp
        if exp > 5 or man > 10 or (exp == 5 and man == 10):
            self._format = "quantisedFp32"
            self._gfloat_storage_dtype = dtypes.float32
            self._gfloat_native_dtype = (dtypes.float16 if exp == 5 and man == 10
                                         and self._en_inf else dtypes.float32)
            if exp == 5 and man == 10:
                self._gfloat_storage_dtype, self._format = dtypes.float16, "ieeeFp16"
            elif self._packed_bits < 8:
                self._gfloat_storage_dtype, self._format = dtypes.int8, "enDenormGf16"
                self._gfloat_as_int = True
            elif self._packed_bits < 16:
                self._gfloat_storage_dtype = dtypes.int16
                self._gfloat_native_dtype = dtypes.float32
                self._gfloat_as_int = True
                self._format = ("bfloat16" if exp == 8 else
                                "enDenormGf16" if self._en_denorm else "noDenormGf16")
            if self._gfloat_calc_spec_dtype in ("auto", "fp32"):
                self._gfloat_calc_dtype = dtypes.float32
            elif self._gfloat_calc_spec_dtype == "fp16":
                raise RuntimeError("Gfloat format cannot be generated using IEEE FP16")
            else:
                raise RuntimeError("Gfloat calculation type not supported")
        else:
            self._format = "quantisedFp16"
            self._gfloat_storage_dtype = dtypes.float16
            if exp == 5 and not self._en_inf:
                self._format = "maxNormAlignGf8"
            self._gfloat_native_dtype = dtypes.float16
            if self._packed_bits < 8:
                self._gfloat_as_int = True
                self._gfloat_storage_dtype = dtypes.int8
                self._format = (("oneFiveTwoGf8" if self._en_inf else "maxNormAlignGf8")
                                if exp == 5 else "minNormAlignGf8")
            if self._gfloat_calc_spec_dtype in ("auto", "fp16"):
                self._gfloat_calc_dtype = dtypes.float16
            elif self._gfloat_calc_spec_dtype == "fp32":
                self._gfloat_calc_dtype = dtypes.float32
            else:
                raise RuntimeError("Gfloat calculation type not supported")
        self._fmt = gfloat.Format(man, exp, self._bias, self._en_denorm, self._en_inf)

    def reset(self) -> None:
        """Recompute the format's types after its properties changed."""
        self._is_set = None
        self.set_param()

    # ---- the casts --------------------------------------------------------------------------
    def cast_native_to_gfloat(self, inputs, en_nanoo=True, round_mode="RN",
                              sr_density="Invalid", sr_bits=23, sr_norm_offset=0.0,
                              sr_norm_scale=1.0, sr_norm_min=-0.5, sr_norm_max=0.5,
                              sr_prob=1.0, storage_type="auto"):
        """Round ``inputs`` onto the format (module docstring).

        Returns:
          A tensor of ``inputs``' shape in the storage type (packed codes for packed
          formats; ``storage_type`` 'fp32' / 'fp16' forces that float type).

        Raises:
          RuntimeWarning: ``en_nanoo`` for a format without Inf/NaN (Graphcore raises it).
          RuntimeError: parameters changed without ``reset``; an unknown ``storage_type``.
          ValueError: an unknown ``round_mode`` or ``sr_density``; for stochastic rounding
            (the other modes ignore them), ``sr_bits`` negative, ``sr_prob`` outside [0, 1]
            (Bernoulli), ``sr_norm_scale`` not positive, ``sr_norm_min`` / ``sr_norm_max``
            outside the density's range ([-0.5, 0.5], or [0, 1] for the logit-normal
            densities) or in the wrong order (the message names the argument).
        """
        if en_nanoo and not self._en_inf:
            raise RuntimeWarning("Gfloat format's Infs and Nans are not enabled. Input Nans and "
                                 "Infs will be set to 0. The quantization will clip on-overflow")
        if self._is_set is None:
            raise RuntimeError("Cast object properties were modified and object was not reset")
        out_type = self._storage(storage_type)
        if round_mode not in gfloat.ROUND_MODES:
            raise ValueError(f"cast_native_to_gfloat: round_mode must be one of "
                             f"{', '.join(gfloat.ROUND_MODES)}, got {round_mode!r}")
        x = math_ops.cast(inputs, self._gfloat_calc_dtype)
        noise, prob = self._noise(x, round_mode, sr_density, sr_bits, sr_norm_offset,
                                  sr_norm_scale, sr_norm_min, sr_norm_max, sr_prob)
        return gfloat.cast_to_gfloat(x, noise, self._fmt, round_mode,
                                     bool(en_nanoo and self._en_inf), prob, out_type)

    def cast_gfloat_to_native(self, inputs, storage_type="auto"):
        """Unpack packed codes to the native type (``storage_type`` 'fp32' / 'fp16' forces
        one); inputs of an unpacked format are returned as they are.

        Raises:
          RuntimeError: parameters not set; an unknown ``storage_type``."""
        if not self._is_set:
            raise RuntimeError("Gfloat parameters are not set. Try to reset parameters")
        if not self._gfloat_as_int:
            return inputs
        out_type = {"auto": self._gfloat_native_dtype, "fp32": dtypes.float32,
                    "fp16": dtypes.float16}.get(storage_type)
        if out_type is None:
            raise RuntimeError("Gfloat storage format not supported")
        return gfloat.cast_from_gfloat(inputs, self._fmt, out_type)

    def get_cast_native_to_gfloat_fun(self, en_nanoo=True, round_mode="RN", sr_bits=23,
                                      sr_density="Invalid", sr_norm_offset=0.0,
                                      sr_norm_scale=1.0, sr_norm_min=-0.5, sr_norm_max=0.5,
                                      sr_prob=1.0, storage_type="auto"):
        """``cast_native_to_gfloat`` with these arguments, as a one-argument function."""
        return lambda x: self.cast_native_to_gfloat(
            x, en_nanoo=en_nanoo, round_mode=round_mode, sr_bits=sr_bits,
            sr_density=sr_density, sr_norm_offset=sr_norm_offset, sr_norm_scale=sr_norm_scale,
            sr_norm_min=sr_norm_min, sr_norm_max=sr_norm_max, sr_prob=sr_prob,
            storage_type=storage_type)

    def get_cast_gfloat_to_native_fun(self, storage_type="auto"):
        """``cast_gfloat_to_native`` with this ``storage_type``, as a one-argument function."""
        return lambda x: self.cast_gfloat_to_native(x, storage_type=storage_type)

    def _storage(self, storage_type):
        out = {"auto": self._gfloat_storage_dtype, "fp32": dtypes.float32,
               "fp16": dtypes.float16}.get(storage_type)
        if out is None:
            raise RuntimeError("Gfloat storage format not supported")
        return out

    def _noise(self, x, round_mode, density, sr_bits, offset, scale, lo, hi, prob):
        """The noise of a stochastic rounding (``n`` in ``gfloat_noise``) and the Bernoulli
        probability, or (an empty array, None) for deterministic modes."""
        gfloat_noise.check_density(density)
        if round_mode not in ("SR", "SX"):
            return np.zeros(0, np.float32), None
        gfloat_noise.check(density, sr_bits, offset, scale, lo, hi, prob)
        shape = list(x.shape)
        if any(d is None for d in shape):  # a graph's partly known shape: drawn per run
            shape = array_ops.shape(x)
        if density == "Bernoulli":
            return random_ops.uniform(shape, dtype=dtypes.float64), float(prob)
        return gfloat_noise.noise(shape, density, sr_bits, offset, scale, lo, hi,
                                  self._gfloat_calc_dtype), None

    # ---- properties -------------------------------------------------------------------------
    def get_gfloat_storage_dtype(self):
        return self._gfloat_storage_dtype

    def get_gfloat_calc_dtype(self):
        return self._gfloat_calc_dtype

    def get_gfloat_native_dtype(self):
        return self._gfloat_native_dtype

    def get_gfloat_packed_params(self) -> int:
        """``man | exp << 8 | (bias & 255) << 16 | (en_denorm | en_inf << 1) << 24``."""
        return self._gfloat_packed_params

    def get_mantissa_size(self) -> int:
        return self._man

    def get_exponent_size(self) -> int:
        return self._exp

    def get_exponent_bias(self) -> int:
        return self._bias

    def get_en_denorms(self) -> bool:
        return self._en_denorm

    def get_en_inf(self) -> bool:
        return self._en_inf

    def is_packed_float(self) -> bool:
        return self._gfloat_as_int
