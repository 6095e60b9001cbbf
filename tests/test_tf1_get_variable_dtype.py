"""get_variable with a constant initializer takes the value's dtype (TF's conversion), which
an explicit dtype must equal; the scope's dtype does not apply: against real TF1."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1


def _dtypes(c, tf_mod):
    cases = [(np.int64(7), None), (7, None), (np.array([1.0, 2.0]), None),
             (np.int64(7), tf_mod.float32), ([1, 2], None), (1.5, None),
             (np.float32(2), tf_mod.float64), (7, tf_mod.float32),
             (np.array([1.0, 2.0]), tf_mod.float64), (True, None)]
    out = []
    with c.Graph().as_default():
        cases.append((c.constant([1, 2]), None))
        for i, (init, dtype) in enumerate(cases):
            try:
                out.append(c.get_variable(f"v{i}", initializer=init, dtype=dtype).dtype.name)
            except ValueError as e:
                out.append(str(e))
        with c.variable_scope("s", dtype=tf_mod.float64):
            out += [c.get_variable("a", initializer=np.int64(3)).dtype.name,
                    c.get_variable("b", initializer=2.0).dtype.name,
                    c.get_variable("c", [1]).dtype.name]
    return out


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_constant_initializer_dtypes_equal_real_tensorflow(real_tf):
    import ipu_gpu as tf

    assert _dtypes(v1, tf) == _dtypes(real_tf.compat.v1, real_tf)
