"""tf.compat.v1.train.load_checkpoint / NewCheckpointReader / list_variables /
load_variable on what Saver wrote (each library reads its own format): the same names,
shapes, dtypes, values and errors as real TF1."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1

_V = np.array([[1.5, -2.0, 0.25]], np.float32)


def _save_and_read(c, directory):
    out = []
    for bad in (lambda: c.train.load_checkpoint(str(directory)),
                lambda: c.train.load_checkpoint(str(directory / "missing"))):
        try:
            bad()
        except Exception as e:  # noqa: BLE001 - compared with TF's
            out.append((type(e).__name__, str(e).split(str(directory))[0]))
    g = c.Graph()
    with g.as_default():
        with c.variable_scope("net"):
            c.get_variable("w", initializer=_V)
            c.get_variable("step", initializer=np.int64(7), trainable=False)
        with c.Session(graph=g) as sess:
            sess.run(c.global_variables_initializer())
            prefix = c.train.Saver().save(sess, str(directory / "model"), global_step=3)
    reader = c.train.NewCheckpointReader(prefix)
    out += [c.train.list_variables(str(directory)),
            c.train.load_variable(str(directory), "net/w:0").tolist(),
            c.train.load_variable(prefix, "net/step"),
            reader.has_tensor("net/w"), reader.has_tensor("w"),
            reader.get_variable_to_shape_map(),
            {k: v.name for k, v in reader.get_variable_to_dtype_map().items()},
            c.train.load_checkpoint(str(directory)).get_tensor("net/w").tolist()]
    try:
        reader.get_tensor("nope")
    except Exception as e:  # noqa: BLE001 - compared with TF's
        out.append((type(e).__name__, str(e)))
    return out


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_checkpoint_reading_equals_real_tensorflow(real_tf, tmp_path):
    (tmp_path / "ours").mkdir()
    (tmp_path / "theirs").mkdir()
    ours = _save_and_read(v1, tmp_path / "ours")
    theirs = _save_and_read(real_tf.compat.v1, tmp_path / "theirs")
    assert ours == theirs


def test_loaded_values_are_the_saved_ones(tmp_path):
    with v1.Graph().as_default() as g:
        v = v1.Variable(_V, name="v")
        with v1.Session(graph=g) as sess:
            sess.run(v.initializer)
            sess.run(v.assign(_V * 2.0))
            prefix = v1.train.Saver().save(sess, str(tmp_path / "m"))
    np.testing.assert_array_equal(v1.train.load_variable(prefix, "v"), _V * 2.0)
