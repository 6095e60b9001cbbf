"""Host embeddings (ipu.embedding_ops.HostEmbedding, its optimizer specs and
create_host_embedding): lookups from the host table, the register() lifetime, SGD updates
applied row by row on the host when a GradientTape differentiates the lookup, SGD+GA
applying the summed updates once per accumulation step, and every documented error."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ipu_gpu
from ipu_gpu.emulation import host_embedding as runtime
from ipu_gpu.ipu import embedding_ops
from reference import embedding as ref

HostEmbedding = embedding_ops.HostEmbedding
SGD = embedding_ops.HostEmbeddingOptimizerSpec
SGDGA = embedding_ops.HostEmbeddingSGDGAOptimizerSpec

_names = iter(range(10**9))


@pytest.fixture(autouse=True)
def _no_debug_mode(monkeypatch):
    """Out-of-range ids give zero rows unless a test turns IPU_GPU_DEBUG on itself."""
    monkeypatch.delenv("IPU_GPU_DEBUG", raising=False)


def _name():
    return f"emb{next(_names)}"  # registrations are global by name, as on the IPU


def _embedding(table, spec=None, name=None):
    return HostEmbedding(name or _name(), ipu_gpu.Variable(np.array(table)), optimizer_spec=spec)


def _step(emb, ids, weights, model_vars=()):
    """One eager training step: loss = sum(lookup(ids) * weights); the gradient is asked for
    the model variables and the embedding's dummy. Returns the looked-up rows."""
    with ipu_gpu.GradientTape() as tape:
        rows = emb.lookup(ids)
        loss = ipu_gpu.reduce_sum(rows * weights)
    tape.gradient(loss, list(model_vars) + emb.trainable_variables)
    return rows.numpy()


# ---- specs -------------------------------------------------------------------------------------
def test_specs():
    s = SGD(0.25)
    assert s.get_learning_rate() == 0.25 and s._optimizer_name == "SGD"
    assert s.create_slot_variables(None, "x") == []
    assert SGD(1.0, optimizer_name="SGD+GA")._optimizer_name == "SGD+GA"
    ga = SGDGA(0.5, 4)
    assert ga.get_learning_rate() == 0.5 and ga.get_accumulation_factor() == 4
    assert ga._optimizer_name == "SGD+GA" and isinstance(ga, SGD)
    assert SGDGA(0.5, 1)._optimizer_name == "SGD"


# ---- lookups -----------------------------------------------------------------------------------
def test_lookup_copies_rows_with_clipping_by_default():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    emb = _embedding(table)
    with emb.register() as registered:
        assert registered is emb
        out = emb.lookup(np.asarray([[3, -5], [9, 1]], np.int32))
        assert out.shape == (2, 2, 3) and out.dtype == np.float32
        np.testing.assert_array_equal(out.numpy(), table[[[3, 0], [3, 1]]])
        unclipped = emb.lookup(np.asarray([2, -1, 4], np.int32), clip_indices=False)
        np.testing.assert_array_equal(unclipped.numpy(), [table[2], [0, 0, 0], [0, 0, 0]])
        np.testing.assert_array_equal(emb.lookup([1]).numpy(), table[[1]])  # a Python list
        np.testing.assert_array_equal(emb.lookup(np.int32(2)).numpy(), table[2])


def test_unclipped_out_of_range_raises_in_debug_mode(monkeypatch):
    monkeypatch.setenv("IPU_GPU_DEBUG", "1")
    emb = _embedding(np.zeros((4, 2), np.float32))
    with emb.register():
        with pytest.raises(ValueError, match=r"^HostEmbedding.lookup: indices must be in \[0, 4\)"
                                             r".*got 4 at position 1$"):
            emb.lookup(np.asarray([0, 4], np.int32), clip_indices=False)
        emb.lookup(np.asarray([0, 4], np.int32))  # clipping keeps them in range


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32])
def test_lookup_keeps_the_table_dtype(dtype):
    table = (np.arange(10) * 3).reshape(5, 2).astype(dtype)
    emb = HostEmbedding(_name(), ipu_gpu.constant(table))  # a Tensor is fine when not trained
    with emb.register():
        out = emb.lookup(np.asarray([4, 0], np.int32))
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.numpy(), table[[4, 0]])
    np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(), table)


def test_non_trainable_lookups_record_nothing_and_change_nothing():
    table = np.ones((3, 2), np.float32)
    emb = _embedding(table)
    assert emb.trainable_variables == []
    w = ipu_gpu.Variable(np.ones(2, np.float32))
    with emb.register():
        with ipu_gpu.GradientTape() as tape:
            loss = ipu_gpu.reduce_sum(emb.lookup(np.asarray([0, 1], np.int32)) * w)
        assert tape.watched_variables() == (w,)
        np.testing.assert_array_equal(tape.gradient(loss, w).numpy(), [2, 2])
    np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(), table)


# ---- SGD: updates applied on the host, row by row --------------------------------------------
def test_sgd_update_accumulates_duplicates_in_index_order():
    rng = np.random.default_rng(0)
    table = rng.standard_normal((6, 3)).astype(np.float32)
    emb = _embedding(table, SGD(0.5))
    ids = np.asarray([[1, 4], [1, 1], [5, 4]], np.int32)
    weights = rng.standard_normal((3, 2, 3)).astype(np.float32)
    with emb.register():
        _step(emb, ids, weights)
    # d(loss)/d(rows) == weights: each id's row gets -lr * its weights, duplicates added
    want = ref.sgd_host_update(table, ids, weights, 0.5, np.float32)
    np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(), want)
    np.testing.assert_allclose(want, table - 0.5 * ref.embedding_lookup_grad(table.shape, ids,
                                                                             weights), rtol=1e-6)


def test_sgd_training_loop_matches_a_float64_simulation():
    """A small model: rows = lookup(ids); pred = rows @ w; loss = mean((pred - y)^2). The
    device variable w is trained by plain SGD, the host table by the HostEmbedding's SGD."""
    rng = np.random.default_rng(1)
    v, e, lr = 8, 4, 0.1
    table0 = rng.standard_normal((v, e)).astype(np.float32)
    w0 = rng.standard_normal((e, 1)).astype(np.float32)
    batches = [(rng.integers(0, v, 6).astype(np.int32), rng.standard_normal((6, 1)))
               for _ in range(5)]
    emb = _embedding(table0, SGD(lr))
    w = ipu_gpu.Variable(w0)
    with emb.register():
        for ids, y in batches:
            with ipu_gpu.GradientTape() as tape:
                pred = ipu_gpu.matmul(emb.lookup(ids), w)
                loss = ipu_gpu.reduce_mean(ipu_gpu.square(pred - y.astype(np.float32)))
            gw, gd = tape.gradient(loss, [w] + emb.trainable_variables)
            assert float(gd.numpy()) == 0.0  # the dummy itself gets no gradient
            w.assign_sub(lr * gw)
    table, ww = table0.astype(np.float64), w0.astype(np.float64)
    for ids, y in batches:
        rows = table[ids]
        dpred = 2 * (rows @ ww - y) / len(ids)
        grow, gw = dpred @ ww.T, rows.T @ dpred
        table = ref.sgd_host_update(table, ids, grow, lr)
        ww = ww - lr * gw
    np.testing.assert_allclose(emb.get_embedding_tensor().numpy(), table, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.numpy(), ww, rtol=1e-5, atol=1e-6)


def test_watched_variables_include_the_dummy():
    emb = _embedding(np.zeros((3, 2), np.float32), SGD(1.0))
    with emb.register():
        with ipu_gpu.GradientTape() as tape:
            loss = ipu_gpu.reduce_sum(emb.lookup(np.asarray([2], np.int32)))
        assert list(tape.watched_variables()) == emb.trainable_variables
        tape.gradient(loss, tape.watched_variables())
    np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(), [[0, 0], [0, 0], [-1, -1]])


def test_no_update_when_the_dummy_is_not_differentiated():
    emb = _embedding(np.zeros((3, 2), np.float32), SGD(1.0))
    w = ipu_gpu.Variable(np.ones(2, np.float32))
    with emb.register():
        _step(emb, np.asarray([1], np.int32), w)  # gradient for the dummy too
        with ipu_gpu.GradientTape() as tape:
            loss = ipu_gpu.reduce_sum(emb.lookup(np.asarray([0], np.int32)) * w)
        tape.gradient(loss, w)  # only w: the host table is left alone
    np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(), [[0, 0], [-1, -1], [0, 0]])


def test_persistent_tape_sends_one_update_per_gradient_call():
    emb = _embedding(np.zeros((2, 1), np.float32), SGD(1.0))
    with emb.register():
        with ipu_gpu.GradientTape(persistent=True) as tape:
            loss = ipu_gpu.reduce_sum(emb.lookup(np.asarray([1], np.int32)))
        tape.gradient(loss, emb.trainable_variables)
        tape.gradient(loss, emb.trainable_variables)
    np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(), [[0], [-2]])


def test_float16_table_updates_in_float16():
    rng = np.random.default_rng(2)
    table = rng.standard_normal((5, 3)).astype(np.float16)
    emb = _embedding(table, SGD(0.1))
    ids = rng.integers(0, 5, 12).astype(np.int32)
    weights = rng.standard_normal((12, 3)).astype(np.float16)
    with emb.register():
        _step(emb, ids, weights)
    got = emb.get_embedding_tensor().numpy()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, ref.sgd_host_update(table, ids, weights, 0.1, np.float16))


def test_unclipped_out_of_range_updates_are_dropped():
    emb = _embedding(np.zeros((3, 1), np.float32), SGD(1.0))
    with emb.register():
        with ipu_gpu.GradientTape() as tape:
            rows = emb.lookup(np.asarray([2, 3, -1, 2], np.int32), clip_indices=False)
            loss = ipu_gpu.reduce_sum(rows)
        tape.gradient(loss, emb.trainable_variables)
    np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(), [[0], [0], [-2]])


def test_variable_reads_before_register_keep_their_values():
    var = ipu_gpu.Variable(np.zeros((2, 2), np.float32))
    before = var.read_value()
    emb = HostEmbedding(_name(), var, optimizer_spec=SGD(1.0))
    with emb.register():
        _step(emb, np.asarray([0], np.int32), np.ones(2, np.float32))
        inside = var.numpy()
    np.testing.assert_array_equal(before.numpy(), 0)
    np.testing.assert_array_equal(inside, [[-1, -1], [0, 0]])
    np.testing.assert_array_equal(var.numpy(), [[-1, -1], [0, 0]])


def test_replica_threads_updating_concurrently_all_apply():
    emb = _embedding(np.zeros((4, 2), np.float32), SGD(1.0))
    ids = np.asarray([0, 1, 1, 3], np.int32)
    with emb.register():
        threads = [threading.Thread(target=_step, args=(emb, ids, np.ones((4, 2), np.float32)))
                   for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(),
                                  [[-4, -4], [-8, -8], [0, 0], [-4, -4]])


# ---- SGD+GA: the summed updates, once per accumulation step -------------------------------------
def test_sgd_ga_applies_the_sum_once_per_accumulation_step():
    rng = np.random.default_rng(3)
    table0 = rng.standard_normal((5, 2)).astype(np.float32)
    emb = _embedding(table0, SGDGA(0.5, 3))
    steps = [(rng.integers(0, 5, 4).astype(np.int32),
              rng.standard_normal((4, 2)).astype(np.float32)) for _ in range(7)]
    seen, tables = [], []
    with emb.register():
        for ids, weights in steps:
            seen.append(_step(emb, ids, weights))
            tables.append(emb.get_embedding_tensor().numpy().copy())
    want = table0
    for s, (ids, _) in enumerate(steps):
        if s % 3 == 0:
            start = want  # the table the lookups of this accumulation step read
        np.testing.assert_array_equal(seen[s], start[ids])
        if s % 3 == 2:  # the third mini-batch: all three updates land together
            for ids_k, weights_k in steps[s - 2:s + 1]:
                want = ref.sgd_host_update(want, ids_k, weights_k, 0.5, np.float32)
        np.testing.assert_array_equal(tables[s], want, err_msg=f"after step {s}")
    # step 7 (index 6) started a new accumulation step; leaving the context discards it
    np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(), tables[5])


def test_sgd_ga_counts_mini_batches_not_lookups():
    emb = _embedding(np.zeros((3, 1), np.float32), SGDGA(1.0, 2))
    with emb.register():
        for step in range(4):
            with ipu_gpu.GradientTape() as tape:
                a = emb.lookup(np.asarray([0], np.int32))
                b = emb.lookup(np.asarray([2, 2], np.int32))
                loss = ipu_gpu.reduce_sum(a) + ipu_gpu.reduce_sum(b)
            tape.gradient(loss, emb.trainable_variables)
            got = emb.get_embedding_tensor().numpy().ravel()
            applied = (step + 1) // 2 * 2  # mini-batches applied so far
            np.testing.assert_array_equal(got, [-applied, 0, -2 * applied])


def test_sgd_ga_closes_a_mini_batch_with_an_unused_lookup_at_the_next_step():
    emb = _embedding(np.zeros((2, 1), np.float32), SGDGA(1.0, 2))
    with emb.register():
        for _ in range(2):
            with ipu_gpu.GradientTape() as tape:
                emb.lookup(np.asarray([1], np.int32))  # never reaches the loss
                loss = ipu_gpu.reduce_sum(emb.lookup(np.asarray([0], np.int32)))
            tape.gradient(loss, emb.trainable_variables)
        # the second mini-batch is still open (one lookup sent nothing): not applied yet
        np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(), [[0], [0]])
        emb.lookup(np.asarray([0], np.int32))  # the next step starts: the batch closes
        np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(), [[-2], [0]])


def test_notify_applies_the_buffer_now():
    name = _name()
    emb = _embedding(np.zeros((2, 1), np.float32), SGDGA(1.0, 5), name=name)
    with emb.register():
        _step(emb, np.asarray([1], np.int32), np.ones((1, 1), np.float32))
        np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(), [[0], [0]])
        runtime.registered_table(name).notify()
        np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(), [[0], [-1]])


# ---- register() lifetime ------------------------------------------------------------------------
def test_lookup_outside_register_raises():
    emb = _embedding(np.zeros((2, 1), np.float32))
    with pytest.raises(RuntimeError, match="is not registered"):
        emb.lookup(np.asarray([0], np.int32))


def test_update_after_deregistration_raises():
    emb = _embedding(np.zeros((2, 1), np.float32), SGD(1.0))
    with emb.register():
        with ipu_gpu.GradientTape() as tape:
            loss = ipu_gpu.reduce_sum(emb.lookup(np.asarray([0], np.int32)))
    with pytest.raises(RuntimeError, match="after leaving its register"):
        tape.gradient(loss, emb.trainable_variables)


def test_register_twice_raises_and_reregistering_continues():
    emb = _embedding(np.zeros((2, 1), np.float32), SGD(1.0))
    with emb.register(session=object()):  # a session is accepted and not needed
        with pytest.raises(RuntimeError, match="already registered"):
            with emb.register():
                pass
        _step(emb, np.asarray([0], np.int32), np.ones((1, 1), np.float32))
    with emb.register():
        _step(emb, np.asarray([0], np.int32), np.ones((1, 1), np.float32))
    np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(), [[-2], [0]])


def test_call_raises_not_implemented():
    with pytest.raises(NotImplementedError, match=r"^HostEmbedding.__call__ is not supported\. "
                                                  r"Please use the context manager"):
        _embedding(np.zeros((2, 1), np.float32))(1)


def test_unknown_optimizer_name_is_refused_at_registration():
    emb = _embedding(np.zeros((2, 1), np.float32), SGD(1.0, optimizer_name="Adam"))
    with pytest.raises(ValueError, match="optimizer_name must be 'SGD' or 'SGD\\+GA', got 'Adam'"):
        with emb.register():
            pass


# ---- construction errors -------------------------------------------------------------------------
@pytest.mark.parametrize(("tensor", "kwargs", "exc", "match"), [
    (np.zeros((2, 2), np.float32), {}, ValueError,
     r"^HostEmbedding embedding_tensor is not a tensorflow tensor$"),
    ("var", {"optimizer_spec": 0.1}, ValueError,
     r"^HostEmbedding optimizer_spec is not a HostEmbeddingOptimizerSpec or None$"),
    ("var", {"partition_strategy": "ROWS"}, ValueError, r"^Unknown partition strategy ROWS$"),
    (ipu_gpu.Variable(np.zeros((2, 2), bool)), {}, TypeError,
     r"^HostEmbedding: embedding_tensor must be float16, float32, float64 or int32, got bool"),
    (ipu_gpu.Variable(np.zeros(4, np.float32)), {}, ValueError,
     r"^HostEmbedding: embedding_tensor must have rank 2"),
    (ipu_gpu.constant(np.zeros((2, 2), np.float32)), {"optimizer_spec": SGD(0.1)}, ValueError,
     r"^HostEmbedding: a trainable embedding_tensor must be a floating-point Variable"),
    (ipu_gpu.Variable(np.zeros((2, 2), np.int32)), {"optimizer_spec": SGD(0.1)}, ValueError,
     r"^HostEmbedding: a trainable embedding_tensor must be a floating-point Variable, got a "
     r"int32 Variable"),
])
def test_construction_errors(tensor, kwargs, exc, match):
    if isinstance(tensor, str):
        tensor = ipu_gpu.Variable(np.zeros((2, 2), np.float32))
    with pytest.raises(exc, match=match):
        HostEmbedding("bad", tensor, **kwargs)


def test_lookup_indices_must_be_int32():
    emb = _embedding(np.zeros((2, 1), np.float32))
    with emb.register():
        with pytest.raises(TypeError, match=r"^HostEmbedding.lookup: indices must be int32, got "
                                            r"int64"):
            emb.lookup(np.asarray([0], np.int64))


def test_gpu_tensor_is_refused(monkeypatch):
    class FakeCupyArray:  # is_cupy_array looks at the module name only
        __module__ = "cupy._core.core"
        dtype = np.dtype(np.float32)
        ndim = 2

    t = ipu_gpu.constant(np.zeros((2, 2), np.float32))
    monkeypatch.setattr(t, "_value", FakeCupyArray(), raising=False)
    with pytest.raises(ValueError, match="must be in host memory"):
        HostEmbedding("gpu", t)


# ---- create_host_embedding -----------------------------------------------------------------------
def test_create_host_embedding_initializers():
    emb = embedding_ops.create_host_embedding(_name(), [100, 20], ipu_gpu.float32,
                                              partition_strategy="ENCODING")
    t = emb.get_embedding_tensor()
    assert isinstance(t, ipu_gpu.Variable) and t.shape == (100, 20) and t.dtype == np.float32
    limit = np.sqrt(6 / 120)
    assert 0 < np.abs(t.numpy()).max() <= limit  # Glorot uniform, TF's get_variable default
    ints = embedding_ops.create_host_embedding(_name(), (3, 2), np.int32)
    np.testing.assert_array_equal(ints.get_embedding_tensor().numpy(), 0)
    ones = embedding_ops.create_host_embedding(
        _name(), (3, 2), "float16", optimizer_spec=SGD(1.0),
        initializer=lambda shape, dtype: np.ones(shape, dtype))
    assert ones.get_embedding_tensor().dtype == np.float16
    np.testing.assert_array_equal(ones.get_embedding_tensor().numpy(), 1)
    value = embedding_ops.create_host_embedding(_name(), (2, 2), np.float32,
                                                initializer=np.eye(2))
    np.testing.assert_array_equal(value.get_embedding_tensor().numpy(), np.eye(2))
    with pytest.raises(ValueError, match=r"^create_host_embedding: initializer must give shape "
                                         r"\[2, 3\], got \[2, 2\]"):
        embedding_ops.create_host_embedding(_name(), (2, 3), np.float32, initializer=np.eye(2))
    with pytest.raises(ValueError, match="Unknown partition strategy"):
        embedding_ops.create_host_embedding(_name(), (2, 3), np.float32, partition_strategy="X")


@pytest.mark.parametrize(("shape", "exc", "match"), [
    # TF's get_variable: ValueError "Dimension -1 must be >= 0", TypeError for 2.5
    ([-1, 3], ValueError, r"shape must not have negative sizes, got \[-1, 3\]$"),
    ((4, -2), ValueError, r"shape must not have negative sizes, got \[4, -2\]$"),
    ([None, 3], ValueError, r"shape must be fully defined, got \[None, 3\]$"),
    ([2.5, 3], TypeError, r"shape must be a list of ints \[tokens, encoding\], got \[2.5, 3\]$"),
    ([True, 3], TypeError, r"shape must be a list of ints"),
    (5, TypeError, r"shape must be a list of ints \[tokens, encoding\], got 5$"),
    ([4], ValueError, r"shape must have rank 2 \[tokens, encoding\], got \[4\]$"),
    ([2, 3, 4], ValueError, r"shape must have rank 2 \[tokens, encoding\], got \[2, 3, 4\]$"),
])
def test_create_host_embedding_validates_shape(shape, exc, match):
    for initializer in (None, lambda shape, dtype: np.zeros(shape, dtype)):
        with pytest.raises(exc, match="^create_host_embedding: " + match):
            embedding_ops.create_host_embedding(_name(), shape, np.float32,
                                                initializer=initializer)


def test_create_host_embedding_too_large_for_the_host():
    # TF: ResourceExhaustedError "OOM when allocating tensor with shape[...]" from its
    # initializer; here before any initializer runs
    calls = []
    for initializer in (None, lambda shape, dtype: calls.append(shape)):
        with pytest.raises(ipu_gpu.errors.ResourceExhaustedError,
                           match=r"^create_host_embedding: OOM when allocating tensor with "
                                 r"shape\[1099511627776,1048576\] and type float on CPU"):
            embedding_ops.create_host_embedding(_name(), [2**40, 2**20], np.float32,
                                                initializer=initializer)
    assert calls == []
    empty = embedding_ops.create_host_embedding(_name(), np.array([0, 3]), np.float32)
    assert empty.get_embedding_tensor().shape == (0, 3)


def test_create_host_embedding_trains_end_to_end():
    emb = embedding_ops.create_host_embedding(
        _name(), (4, 2), np.float32, optimizer_spec=SGD(0.5),
        initializer=lambda shape, dtype: np.arange(8, dtype=dtype).reshape(shape))
    with emb.register():
        rows = _step(emb, np.asarray([[3, 3], [0, 9]], np.int32), np.ones((2, 2, 2), np.float32))
    np.testing.assert_array_equal(rows, [[[6, 7], [6, 7]], [[0, 1], [6, 7]]])
    np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(),
                                  [[-0.5, 0.5], [2, 3], [4, 5], [4.5, 5.5]])


# ---- the public API on each backend (the cupy row runs where a GPU exists) -----------------------
def test_rows_land_on_the_device_of_the_indices(backend):
    table = np.arange(8, dtype=np.float32).reshape(4, 2)
    emb = _embedding(table, SGD(1.0))
    ids = backend.asarray(np.asarray([1, 1, 3], np.int32))
    with emb.register():
        with ipu_gpu.GradientTape() as tape:
            rows = emb.lookup(ids)
            loss = ipu_gpu.reduce_sum(rows)
        tape.gradient(loss, tape.watched_variables())
    assert isinstance(rows._value, backend.ndarray)
    np.testing.assert_array_equal(np.asarray(rows.numpy()), table[[1, 1, 3]])
    np.testing.assert_array_equal(emb.get_embedding_tensor().numpy(),
                                  table - np.asarray([[0, 0], [2, 2], [0, 0], [1, 1]]))
