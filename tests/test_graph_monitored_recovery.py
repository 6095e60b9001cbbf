"""TF 1.15's monitored-session recovery: an ``AbortedError``/``UnavailableError`` raised in a
run (here by a hook, once) closes the session, a new one restores the newest checkpoint of
``checkpoint_dir`` (hooks' ``after_create_session`` again, ``begin`` not), and training goes
on; against real TensorFlow's tf.compat.v1 and a numpy model."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1

W0 = np.array([1.0, -2.0, 0.5], np.float32)


def _recovering_run(c, directory, error, method, abort_at=3, last=6, step_fn=False):
    """A MonitoredTrainingSession (checkpoint every 2 steps) of Adam on sum(w * w) with a
    hook raising ``error`` once from ``method`` when the global step is ``abort_at``.
    Returns the hook's events, the losses run, the final checkpoint's values and the
    checkpoints kept."""
    events = []
    with c.Graph().as_default():
        w = c.get_variable("w", initializer=W0)
        step = c.train.get_or_create_global_step()
        loss = c.reduce_sum(w * w)
        train = c.train.AdamOptimizer(0.1).minimize(loss, global_step=step)

        class Preempt(c.train.SessionRunHook):
            raised = False

            def begin(self):
                events.append("begin")

            def after_create_session(self, session, coord):
                events.append(("created", int(session.run(step))))

            def _maybe_raise(self, session, where):
                s = int(session.run(step))
                events.append((where, s))
                if where == method and s == abort_at and not self.raised:
                    Preempt.raised = True
                    raise getattr(c.errors, error)(None, None, "preempted")

            def before_run(self, run_context):
                self._maybe_raise(run_context.session, "before_run")

            def after_run(self, run_context, run_values):
                self._maybe_raise(run_context.session, "after_run")

            def end(self, session):
                events.append(("end", int(session.run(step))))

        losses = []
        hooks = [Preempt(), c.train.StopAtStepHook(last_step=last)]
        with c.train.MonitoredTrainingSession(checkpoint_dir=directory, hooks=hooks,
                                              save_checkpoint_steps=2,
                                              save_summaries_steps=None,
                                              log_step_count_steps=None) as sess:
            while not sess.should_stop():
                if step_fn:
                    losses.append(float(sess.run_step_fn(
                        lambda step_context: step_context.run_with_hooks([loss, train])[0])))
                else:
                    losses.append(float(sess.run([loss, train])[0]))
    latest = c.train.latest_checkpoint(directory)
    values = {name: c.train.load_variable(latest, name)
              for name, _ in c.train.list_variables(latest)}
    state = c.train.get_checkpoint_state(directory)
    kept = [os.path.basename(p) for p in state.all_model_checkpoint_paths]
    return events, losses, values, kept


@pytest.mark.parametrize("error,method,step_fn", [
    ("AbortedError", "after_run", False),
    ("UnavailableError", "before_run", False),
    ("AbortedError", "after_run", True),
])
def test_a_preempted_run_recovers_from_the_latest_checkpoint_as_tf(real_tf, tmp_path, error,
                                                                   method, step_fn):
    ours = _recovering_run(v1, str(tmp_path / "ours"), error, method, step_fn=step_fn)
    theirs = _recovering_run(real_tf.compat.v1, str(tmp_path / "tf"), error, method,
                             step_fn=step_fn)
    assert ours[0] == theirs[0]  # the hooks' calls, and the steps they saw
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    assert ours[2].keys() == theirs[2].keys()
    for name, value in theirs[2].items():
        np.testing.assert_allclose(ours[2][name], value, rtol=1e-6, atol=1e-7)
    assert ours[3] == theirs[3]


def test_recovery_resumes_at_the_checkpointed_step(tmp_path):
    """Aborted after the run that made step 3 (checkpoint at step 2): the new session
    restores step 2 (Adam's slots and beta powers too) and the run is retried, so the
    losses and the final values are those of a run never aborted, bit for bit, and 6 Adam
    steps from W0 (numpy)."""
    events, losses, values, _ = _recovering_run(v1, str(tmp_path / "a"), "AbortedError",
                                                "after_run")
    assert events.count("begin") == 1
    assert [e for e in events if e[0] == "created"] == [("created", 0), ("created", 2)]
    _, straight, want, _ = _recovering_run(v1, str(tmp_path / "b"), "AbortedError",
                                           "after_run", abort_at=-1)
    np.testing.assert_array_equal(losses, straight)
    assert values.keys() == want.keys()
    for name in want:
        np.testing.assert_array_equal(values[name], want[name])
    assert int(values["global_step"]) == 6
    w, m, v = W0.astype(np.float64), 0.0, 0.0
    for t in range(1, 7):
        g = 2 * w
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        w = w - 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(values["w"], w, rtol=1e-5, atol=1e-5)  # float32 vs float64


def test_other_errors_are_not_recovered(tmp_path):
    with pytest.raises(ig.errors.InvalidArgumentError, match="preempted"):
        _recovering_run(v1, str(tmp_path), "InvalidArgumentError", "after_run")
