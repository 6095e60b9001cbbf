"""``Discretization``: bucket continuous values by ``bin_boundaries`` (given, or learnt by
``adapt`` as the quantiles of tf-keras's weighted quantile summary), as indices or encoded
by ``output_mode``."""

from __future__ import annotations

import numpy as np

from ....core.convert import convert_to_tensor
from ....core.dtypes import as_dtype
from ... import backend
from . import categorical as _cat
from .base import PreprocessingLayer, on_values

__all__ = ["Discretization"]


def summarize(values: np.ndarray, epsilon: float) -> np.ndarray:
    """[2, k] (boundaries, weights): every ``step``-th sorted value, each weighing ``step``."""
    values = np.sort(values.reshape(-1).astype(np.float32))
    elements = np.float32(values.size)
    num_buckets = np.float32(1.0) / np.float32(epsilon)
    increment = int(elements / num_buckets)
    step = max(increment, 1)
    boundaries = values[increment::step]
    return np.stack([boundaries, np.full(boundaries.shape, np.float32(step))])


def compress(summary: np.ndarray, epsilon: float) -> np.ndarray:
    """The summary re-binned to about 1 / ``epsilon`` weighted points."""
    if summary.shape[1] * epsilon < 1:
        return summary
    percents = epsilon + np.arange(0.0, 1.0, epsilon)
    cum_weights = summary[1].cumsum()
    cum_weight_percents = cum_weights / cum_weights[-1]
    new_bins = np.interp(percents, cum_weight_percents, summary[0])
    cum_weights = np.interp(percents, cum_weight_percents, cum_weights)
    new_weights = cum_weights - np.concatenate((np.array([0]), cum_weights[:-1]))
    return np.stack((new_bins, new_weights)).astype(np.float32)


def merge_summaries(prev: np.ndarray, nxt: np.ndarray, epsilon: float) -> np.ndarray:
    merged = np.concatenate((prev, nxt), axis=1)
    merged = merged[:, np.argsort(merged[0], kind="stable")]
    return compress(merged, epsilon)


def get_bin_boundaries(summary: np.ndarray, num_bins: int) -> np.ndarray:
    return compress(summary, 1.0 / num_bins)[0, :-1]


class Discretization(PreprocessingLayer):
    """Bucket inputs: index i for ``bin_boundaries[i-1] <= x < bin_boundaries[i]``; with
    ``num_bins``, ``adapt`` learns ``num_bins - 1`` boundaries (quantiles, to ``epsilon``).

    Raises:
      ValueError: an unknown ``output_mode``; "int" with a non-integer ``dtype``; ``sparse``
        with "int"; a negative ``num_bins``; both ``num_bins`` and ``bin_boundaries``;
        ``adapt`` on a layer given ``bin_boundaries``.
    """

    _shape_inference = True

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int",
                 sparse=False, **kwargs):
        if "bins" in kwargs:  # deprecated
            bins = kwargs.pop("bins")
            if isinstance(bins, int) and num_bins is None:
                num_bins = bins
            elif bin_boundaries is None:
                bin_boundaries = bins
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = "int64" if output_mode == _cat.INT else backend.floatx()
        elif output_mode == _cat.INT and as_dtype(kwargs["dtype"]).kind not in "iu":
            kwargs["dtype"] = "int64"
        super().__init__(**kwargs)
        if output_mode == _cat.INT and as_dtype(self.compute_dtype).kind not in "iu":
            raise ValueError("When `output_mode='int'`, `dtype` should be an integer type. "
                             f"Received: dtype={kwargs['dtype']}")
        _cat.validate_string_arg(output_mode, (_cat.INT, _cat.ONE_HOT, _cat.MULTI_HOT,
                                               _cat.COUNT), type(self).__name__, "output_mode")
        if sparse and output_mode == _cat.INT:
            raise ValueError("`sparse` may only be true if `output_mode` is `'one_hot'`, "
                             f"`'multi_hot'`, or `'count'`. Received: sparse={sparse} and "
                             f"output_mode={output_mode}")
        if num_bins is not None and num_bins < 0:
            raise ValueError("`num_bins` must be greater than or equal to 0. You passed "
                             f"`num_bins={num_bins}`")
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError("Both `num_bins` and `bin_boundaries` should not be set. You "
                             f"passed `num_bins={num_bins}` and "
                             f"`bin_boundaries={bin_boundaries}`")
        if bin_boundaries is not None and not isinstance(bin_boundaries, list):
            bin_boundaries = _cat.host(bin_boundaries).tolist()
        self.input_bin_boundaries = bin_boundaries
        self.bin_boundaries = bin_boundaries if bin_boundaries is not None else []
        self.num_bins = num_bins
        self.epsilon = epsilon
        self.output_mode = output_mode
        self.sparse = sparse
        self.summary = np.zeros((2, 0), np.float32)

    def update_state(self, data) -> None:
        """Merge a batch's quantile summary into the layer's.

        Raises:
          ValueError: the layer was given ``bin_boundaries``.
          RuntimeError: the layer is not built.
        """
        if self.input_bin_boundaries is not None:
            raise ValueError("Cannot adapt a Discretization layer that has been initialized "
                             "with `bin_boundaries`, use `num_bins` instead. You passed "
                             f"`bin_boundaries={self.input_bin_boundaries}`.")
        if not self.built:
            raise RuntimeError("`build` must be called before `update_state`.")
        data = _cat.host(data).astype(np.float32)
        self.summary = merge_summaries(summarize(data, self.epsilon), self.summary,
                                       self.epsilon)

    def finalize_state(self) -> None:
        if self.input_bin_boundaries is not None or not self.built:
            return
        self.bin_boundaries = get_bin_boundaries(self.summary, self.num_bins).tolist()

    def reset_state(self) -> None:
        if self.input_bin_boundaries is not None or not self.built:
            return
        self.summary = np.zeros((2, 0), np.float32)

    def call(self, inputs):
        return on_values(self._call, inputs)

    def _call(self, inputs):
        values = _cat.host(inputs)
        boundaries = np.asarray(self.bin_boundaries, np.float32).astype(np.float64)
        indices = np.searchsorted(boundaries, values.astype(np.float64), side="right")
        return _cat.encode_categorical_inputs(
            convert_to_tensor(indices.astype(np.int64).reshape(values.shape)),
            output_mode=self.output_mode, depth=len(self.bin_boundaries) + 1,
            sparse=self.sparse, dtype=self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def compute_output_signature(self, input_signature):
        from ....core.spec import TensorSpec

        return TensorSpec(self.compute_output_shape(input_signature.shape), self.compute_dtype)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(bin_boundaries=self.input_bin_boundaries, num_bins=self.num_bins,
                      epsilon=self.epsilon, output_mode=self.output_mode, sparse=self.sparse)
        return config
