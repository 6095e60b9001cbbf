"""tf.compat.v1.init_scope: no control dependencies inside (the name scope kept), and no
gradient tape records, as TF's."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
import ipu_gpu.compat.v1 as v1


def _graph(c, tf_mod):
    g = c.Graph()
    with g.as_default():
        x = c.placeholder(tf_mod.float32, [2], name="x")
        first = c.identity(x, name="first")
        with c.name_scope("outer"), c.control_dependencies([first]):
            inside = c.add(x, x, name="inside")
            with c.init_scope():
                lifted = c.add(x, x, name="lifted")
            after = c.add(x, x, name="after")
        return [(t.op.name, [op.name for op in t.op.control_inputs])
                for t in (inside, lifted, after)]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_init_scope_equals_real_tensorflow(real_tf):
    ours, theirs = _graph(v1, tf), _graph(real_tf.compat.v1, real_tf)
    assert ours == theirs == [("outer/inside", ["first"]), ("outer/lifted", []),
                              ("outer/after", ["first"])]


def test_init_scope_pauses_gradient_tapes():
    x = tf.Variable(np.float32(3.0))
    with tf.GradientTape(persistent=True) as tape:
        with v1.init_scope():
            hidden = x * x
        seen = x * 2.0
    assert tape.gradient(hidden, x) is None
    assert float(tape.gradient(seen, x)) == 2.0
