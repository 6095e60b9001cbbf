"""tf.compat.v1.make_template (variables made once and shared, scopes and name scopes, the
error for a trainable variable made on a later call) and report_uninitialized_variables,
against real TF1 graph mode; Graph.unique_name never hands out a name twice, as TF's."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1

_W = np.array([1.5, -2.0], np.float32)


def _templates(c, tf_mod):
    g = c.Graph()
    with g.as_default():
        x = c.placeholder(tf_mod.float32, [2])

        def scale(y, bias=0.0):
            w = c.get_variable("w", [2], initializer=c.constant_initializer(_W))
            return y * w + bias
        t = c.make_template("tmpl", scale, bias=1.0)
        r1, r2 = t(x), t(x * 2.0)
        t2 = c.make_template("tmpl", scale, create_scope_now_=True)
        scope_before = t2.variable_scope_name
        r3, r4 = t2(x), t2(x)
        with c.variable_scope("outer"):
            t3 = c.make_template("inner", scale)
            r5 = t3(x)
        info = dict(
            scopes=[r.name.rsplit("/", 1)[0] for r in (r1, r2, r3, r4, r5)],
            globals=[v.name for v in c.global_variables()],
            template=[t.name, t.variable_scope_name, scope_before, t3.variable_scope_name,
                      [v.name for v in t.variables], [v.name for v in t.trainable_variables],
                      [v.name for v in t2.global_variables], t.non_trainable_variables],
        )
        with c.Session(graph=g) as sess:
            sess.run(c.global_variables_initializer())
            values = sess.run([r1, r2, r3, r5], {x: np.array([1.0, 3.0], np.float32)})
        return info, values


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_make_template_equals_real_tensorflow(real_tf):
    import ipu_gpu as tf

    ours, theirs = _templates(v1, tf), _templates(real_tf.compat.v1, real_tf)
    for key in theirs[0]:
        assert ours[0][key] == theirs[0][key], key
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    xv = np.array([1.0, 3.0], np.float32)
    np.testing.assert_allclose(ours[1][1], 2 * xv * _W + 1.0, rtol=1e-6)


def test_template_errors_as_tf():
    with pytest.raises(ValueError, match="name cannot be None"):
        v1.make_template(None, lambda: None)
    with v1.Graph().as_default():
        bad = v1.make_template("bad", lambda y: y * v1.Variable(1.0))
        x = v1.placeholder(np.float32, [])
        bad(x)
        with pytest.raises(ValueError, match="Trainable variable created when calling a "
                                             "template after the first time"):
            bad(x)


def _uninitialized(c, tf_mod):
    g = c.Graph()
    with g.as_default():
        a = c.Variable(1.0, name="a")
        c.get_variable("b", [2])
        c.get_local_variable("loc", [1])
        report, only_a = c.report_uninitialized_variables(), \
            c.report_uninitialized_variables([a])
        empty = c.report_uninitialized_variables([])
        out = []
        with c.Session(graph=g) as sess:
            out.append(sess.run(report))
            sess.run(a.initializer)
            out += [sess.run(report), sess.run(only_a)]
            sess.run(c.global_variables_initializer())
            out.append(sess.run(report))
            sess.run(c.local_variables_initializer())
            out += [sess.run(report), sess.run(empty)]
        return [list(o) for o in out], [o.dtype for o in out], report.shape.as_list()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_report_uninitialized_variables_equals_real_tensorflow(real_tf):
    import ipu_gpu as tf

    assert _uninitialized(v1, tf) == _uninitialized(real_tf.compat.v1, real_tf)


def test_unique_names_are_never_reused(real_tf):
    def names(c):
        g = c.Graph()
        with g.as_default():
            x = c.placeholder(np.float32, [], name="x")
            ops = [c.identity(x, name=n) for n in ("a", "a_1", "a", "A", "a_2", "a")]
            return [o.op.name for o in ops]
    assert names(v1) == names(real_tf.compat.v1)
