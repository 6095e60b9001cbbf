"""tf.Module: default names, variables/trainable_variables/submodules found through
attributes, nested containers and sub-modules, compared with real TensorFlow's tf.Module."""

import numpy as np
import pytest

import ipu_gpu as tf


def _build(lib):
    class Inner(lib.Module):
        def __init__(self):
            super().__init__()
            self.k = lib.Variable(np.float32([1, 2]), name="k")
            self.frozen = lib.Variable(np.float32(3), trainable=False, name="frozen")

    class OuterModel(lib.Module):
        def __init__(self):
            super().__init__()
            self.layers = [Inner(), {"b": Inner()}]
            self.bias = lib.Variable(np.float32(0.5), name="bias")
            self.same = self.bias  # counted once
    return OuterModel()


def test_module_matches_real_tensorflow(real_tf):
    ours, theirs = _build(tf), _build(real_tf)
    assert ours.name == theirs.name == "outer_model"
    for attr in ("variables", "trainable_variables"):
        assert [v.name for v in getattr(ours, attr)] == [v.name for v in getattr(theirs, attr)]
        for a, b in zip(getattr(ours, attr), getattr(theirs, attr)):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert len(ours.submodules) == len(theirs.submodules) == 2
    assert [m.name for m in ours.submodules] == [m.name for m in theirs.submodules]


def test_module_name_must_be_an_identifier(real_tf):
    with pytest.raises(ValueError, match="is not a valid module name"):
        tf.Module(name="1bad name")
    with pytest.raises(ValueError, match="is not a valid module name"):
        real_tf.Module(name="1bad name")
