"""TF 1.15's monitored sessions (tf.compat.v1.train.MonitoredTrainingSession, MonitoredSession,
SingularMonitoredSession, Scaffold) with StopAtStepHook, CheckpointSaverHook,
LoggingTensorHook and NanTensorHook: the steps run, the losses, the checkpoints written and
restored, should_stop, the end of input and TF's errors, against real TensorFlow's
tf.compat.v1 graph mode and a numpy model."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1

RNG = np.random.default_rng(9)
XS = RNG.standard_normal((40, 3)).astype(np.float32)
YS = (XS @ np.array([[1.0], [-1.0], [0.5]], np.float32))
LR = 0.1


def _model(tf, c, batch=4, nan=False):
    """(global step, loss, train op, weights) of a linear model over a one-shot iterator."""
    ds = tf.data.Dataset.from_tensor_slices((XS, YS)).batch(batch)
    x, y = c.data.make_one_shot_iterator(ds).get_next()
    w = c.Variable(np.zeros((3, 1), np.float32), name="w")
    step = c.train.get_or_create_global_step()
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    if nan:
        loss = loss + c.where(step >= 2, np.float32(np.nan), np.float32(0.0))
    train = c.train.GradientDescentOptimizer(LR).minimize(loss, global_step=step)
    return step, loss, train, w


def _numpy_steps(n, batch=4):
    w = np.zeros((3, 1))
    losses = []
    for k in range(n):
        xb, yb = XS[k * batch:(k + 1) * batch].astype(np.float64), YS[k * batch:(k + 1) * batch]
        r = xb @ w - yb
        losses.append(float(np.mean(r * r)))
        w = w - LR * 2 * xb.T @ r / batch
    return losses, w


def _train_with_checkpoints(tf, c, directory, last_steps=(5, 8)):
    """Two MonitoredTrainingSessions on one checkpoint_dir: the second restores the first's
    last checkpoint. Returns what each saw and the checkpoints kept."""
    out = []
    for last in last_steps:
        with c.Graph().as_default():
            step, loss, train, w = _model(tf, c)
            logged = []
            hooks = [c.train.StopAtStepHook(last_step=last),
                     c.train.LoggingTensorHook({"loss": loss, "step": step}, every_n_iter=2,
                                               formatter=lambda v, logged=logged: logged.append(
                                                   (int(v["step"]), round(float(v["loss"]),
                                                                          5))) or "")]
            losses = []
            with c.train.MonitoredTrainingSession(checkpoint_dir=directory, hooks=hooks,
                                                  save_checkpoint_steps=2,
                                                  save_summaries_steps=None,
                                                  log_step_count_steps=None) as sess:
                while not sess.should_stop():
                    losses.append(float(sess.run([loss, train])[0]))
            with c.Session() as check:
                c.train.Saver().restore(check, c.train.latest_checkpoint(directory))
                out.append({"losses": np.round(losses, 5).tolist(), "logged": logged,
                            "saved_step": int(check.run(step)),
                            "w": check.run(w)})
    state = c.train.get_checkpoint_state(directory)
    kept = [os.path.basename(p) for p in state.all_model_checkpoint_paths]
    return out, kept


def test_monitored_training_session_trains_saves_and_restores_as_tf(real_tf, tmp_path):
    ours, our_kept = _train_with_checkpoints(ig, v1, str(tmp_path / "ours"))
    theirs, their_kept = _train_with_checkpoints(real_tf, real_tf.compat.v1,
                                                 str(tmp_path / "tf"))
    assert our_kept == their_kept
    for a, b in zip(ours, theirs):
        assert a["losses"] == pytest.approx(b["losses"], rel=1e-4, abs=1e-5)
        # TF reads the logged global step concurrently with the train op's increment (no
        # control dependency), so its value is the step before or after; ours is before
        ours_logged, their_logged = [s for s, _ in a["logged"]], [s for s, _ in b["logged"]]
        assert len(ours_logged) == len(their_logged)
        assert all(t in (o, o + 1) for o, t in zip(ours_logged, their_logged))
        assert a["saved_step"] == b["saved_step"]
        np.testing.assert_allclose(a["w"], b["w"], rtol=1e-5, atol=1e-6)
    # numpy: the first session runs steps 0-4 on batches 0-4; the second restores step 5
    # and w, and (a fresh one-shot iterator) trains on batches 0-2 again
    want, w5 = _numpy_steps(5)
    assert ours[0]["losses"] == pytest.approx(want, rel=1e-4, abs=2e-5)
    assert [ours[0]["saved_step"], ours[1]["saved_step"]] == [5, 8]
    assert [[s for s, _ in run["logged"]] for run in ours] == [[0, 2, 4], [5, 7]]
    assert len(ours[1]["losses"]) == 3
    np.testing.assert_allclose(ours[0]["w"], w5, rtol=1e-5, atol=1e-6)


def _until_end_of_input(tf, c):
    """A MonitoredSession run until the iterator ends: the with block ends normally and the
    hooks' end runs."""
    with c.Graph().as_default():
        step, loss, train, _ = _model(tf, c, batch=16)
        ended = []

        class End(c.train.SessionRunHook):
            def end(self, session):
                ended.append(int(session.run(step)))
        runs = 0
        with c.train.MonitoredSession(hooks=[End()]) as sess:
            while not sess.should_stop():
                sess.run(train)
                runs += 1
        return runs, ended, sess.should_stop()


def test_the_end_of_input_ends_the_with_block_normally_as_tf(real_tf):
    ours = _until_end_of_input(ig, v1)
    assert ours == _until_end_of_input(real_tf, real_tf.compat.v1)
    assert ours == (3, [3], True)  # 40 rows in batches of 16: 3 runs, the 4th is the end


def _nan(tf, c):
    with c.Graph().as_default():
        step, loss, train, _ = _model(tf, c, nan=True)
        runs = []
        try:
            with c.train.SingularMonitoredSession(
                    hooks=[c.train.NanTensorHook(loss)]) as sess:
                while not sess.should_stop():
                    sess.run(train)
                    runs.append(int(sess.raw_session().run(step)))
        except Exception as e:  # noqa: BLE001 - the type is compared
            return runs, type(e).__name__
        return runs, None


def test_nan_tensor_hook_raises_as_tf(real_tf):
    ours = _nan(ig, v1)
    assert ours == ([1, 2], "NanLossDuringTrainingError")
    # TF reads the step in the loss concurrently with the train op's increment (the NaN term
    # has no gradient, so nothing orders them): NaN shows at the run of step 2, or one earlier
    assert _nan(real_tf, real_tf.compat.v1) in (ours, ([1], ours[1]))


def _scaffold_and_errors(tf, c):
    out = {}
    with c.Graph().as_default():
        x = c.placeholder(tf.float32, [], name="x")
        v = c.Variable(1.0, name="v")
        y = x * v
        set_v = v.assign(3.0)  # made before the scaffold finalizes the graph

        def init_fn(scaffold, session):
            out["init_fn"] = type(scaffold).__name__
            session.run(set_v)

        class Feeds(c.train.SessionRunHook):
            def before_run(self, run_context):
                return c.train.SessionRunArgs(fetches=v, feed_dict={x: 2.0})

            def after_run(self, run_context, run_values):
                out.setdefault("hook_saw", []).append(float(run_values.results))

        with c.train.MonitoredSession(
                session_creator=c.train.ChiefSessionCreator(
                    scaffold=c.train.Scaffold(init_fn=init_fn)),
                hooks=[Feeds()]) as sess:
            out["y"] = float(sess.run(y))
            try:
                sess.run(y, feed_dict={x: 5.0})
            except RuntimeError as e:
                out["conflict"] = str(e).split(" Conflict")[0]

            def step_fn(step_context):
                out["raw"] = float(step_context.session.run(y, feed_dict={x: 1.0}))
                step_context.request_stop()
            try:
                sess.run_step_fn(step_fn)
            except StopIteration:
                out["stop_iteration"] = True
            try:
                sess.run_step_fn(lambda ctx: None)
            except ValueError as e:
                out["step_fn_args"] = str(e)[:30]
            out["graph_finalized"] = sess.graph.finalized
    with c.Graph().as_default():
        c.Variable(1.0, name="u")
        try:
            with c.train.MonitoredSession(session_creator=c.train.ChiefSessionCreator(
                    scaffold=c.train.Scaffold(init_op=c.no_op()))):
                pass
        except RuntimeError as e:
            out["not_ready"] = str(e).split(",")[0]
    try:
        c.train.Scaffold(copy_from_scaffold=1)
    except TypeError as e:
        out["copy"] = str(e)
    return out


def test_scaffold_hooks_feeds_step_fn_and_errors_as_tf(real_tf):
    ours = _scaffold_and_errors(ig, v1)
    assert ours == _scaffold_and_errors(real_tf, real_tf.compat.v1)
    assert ours["y"] == 6.0 and ours["hook_saw"] == [3.0] and ours["raw"] == 3.0
    assert ours["conflict"] == "Same tensor is fed by a SessionRunHook and user."


def test_run_after_a_stop_request_is_tfs_runtime_error():
    with v1.Graph().as_default():
        step, loss, train, _ = _model(ig, v1)
        sess = v1.train.MonitoredTrainingSession(hooks=[v1.train.StopAtStepHook(num_steps=1)])
        sess.run(train)
        assert sess.should_stop()
        with pytest.raises(RuntimeError, match="Run called even after should_stop"):
            sess.run(train)
        sess.close()
        assert sess.should_stop() and sess.graph is None
        with pytest.raises(RuntimeError, match="already closed"):
            sess.close()


def test_coordinator_keeps_the_first_error_and_stops():
    coord = v1.train.Coordinator()
    assert not coord.should_stop()
    with coord.stop_on_exception():
        raise ValueError("boom")
    coord.request_stop(KeyError("later"))
    assert coord.should_stop() and coord.wait_for_stop(0)
    with pytest.raises(ValueError, match="boom"):
        coord.join()
    clean = v1.train.Coordinator()
    clean.request_stop(ig.errors.OutOfRangeError("End of sequence"))
    clean.join()  # a clean stop is no error


def _summaries(tf, c, directory):
    with c.Graph().as_default():
        step, loss, train, _ = _model(tf, c)
        c.summary.scalar("loss", loss)
        with c.train.MonitoredTrainingSession(
                checkpoint_dir=directory, save_summaries_steps=2, save_checkpoint_secs=None,
                log_step_count_steps=None,
                hooks=[c.train.StopAtStepHook(last_step=5)]) as sess:
            while not sess.should_stop():
                sess.run(train)
    c.summary.FileWriterCache.clear()


def _loss_events(real_tf, directory):
    out = []
    for name in sorted(os.listdir(directory)):
        if "tfevents" not in name:
            continue
        for event in real_tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
            for value in event.summary.value:
                if value.tag == "loss":
                    out.append((event.step, round(value.simple_value, 5)))
    return out


def test_summary_saver_hook_writes_the_steps_tf_writes(real_tf, tmp_path):
    _summaries(ig, v1, str(tmp_path / "ours"))
    _summaries(real_tf, real_tf.compat.v1, str(tmp_path / "tf"))
    ours = _loss_events(real_tf, str(tmp_path / "ours"))
    theirs = _loss_events(real_tf, str(tmp_path / "tf"))
    assert [s for s, _ in ours] == [s for s, _ in theirs] == [1, 3, 5]
    assert [v for _, v in ours] == pytest.approx([v for _, v in theirs], rel=1e-4, abs=1e-5)
