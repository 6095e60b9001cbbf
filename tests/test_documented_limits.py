"""Limits the SDK itself has, raised with its own errors (not emulator gaps)."""

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.ipu import embedded_runtime


def test_pool_with_same_padding_and_dilation_is_tensorflows_value_error():
    x = ig.constant(np.zeros((1, 8, 8, 2), np.float32))
    with pytest.raises(ValueError, match="'SAME' padding is not implemented for `dilation_rate`"):
        ig.nn.pool(x, [2, 2], "MAX", padding="SAME", dilations=[2, 2])
    # the same pooling with VALID padding is computed
    assert ig.nn.pool(x, [2, 2], "MAX", padding="VALID", dilations=[2, 2]).shape == (1, 6, 6, 2)


def test_pool_with_same_padding_and_dilation_matches_real_tensorflow(real_tf):
    x = np.zeros((1, 8, 8, 2), np.float32)
    with pytest.raises(ValueError, match="'SAME' padding is not implemented"):
        real_tf.nn.pool(x, [2, 2], "MAX", padding="SAME", dilations=[2, 2])


def test_embedded_runtime_cannot_stop_an_engine_as_graphcores():
    with pytest.raises(NotImplementedError, match="doesn't support stopping an engine"):
        embedded_runtime.embedded_runtime_stop(object())
