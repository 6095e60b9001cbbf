"""Random ops in tf.data functions seeded as TensorFlow seeds them (issue H).

TF traces a dataset function once: its k-th unseeded random op gets the op seed k (the
function graph's counter) with the global seed of the time the dataset was made, and each op's
kernel belongs to the iterator. So every ``iter(ds)`` repeats the same numbers, a rebuilt
pipeline gives them again, and draws elsewhere between elements change nothing. ipu_gpu's
stateful random kernels are TF's Philox streams bit for bit, so the values are compared with
the real TF exactly; shuffle orders are not TF's, so only their properties are compared."""

from __future__ import annotations

import time

import numpy as np
import pytest

import ipu_gpu as tf


@pytest.fixture(autouse=True)
def _no_global_seed():
    from ipu_gpu.keras import backend

    yield
    tf.random.set_seed(None)
    backend._SEED_GENERATOR.generator = None  # keras.utils.set_random_seed's


def _values(ds) -> list:
    def value(v):
        return tuple(value(c) for c in v) if isinstance(v, tuple) else np.asarray(v).tolist()
    return [value(v) for v in ds]


def _u(E):
    return lambda *_: E.random.uniform([])


# Pipelines built by E (ipu_gpu or the real tensorflow) under global seed 1.
PIPELINES = {
    "map": lambda E: E.data.Dataset.range(4).map(_u(E)),
    "map_ops": lambda E: E.data.Dataset.range(3).map(lambda x: (
        E.random.uniform([]), E.random.normal([2]), E.random.uniform([], seed=5),
        E.random.uniform([], maxval=10, dtype=E.int32), E.random.uniform([]))),
    "same_op_seed_twice": lambda E: E.data.Dataset.range(3).map(lambda x: (
        E.random.uniform([], seed=5), E.random.uniform([], seed=5))),
    "element_shapes": lambda E: E.data.Dataset.range(1, 4).map(
        lambda x: E.random.uniform(E.reshape(x, [1]))).unbatch(),
    "two_maps": lambda E: E.data.Dataset.range(3).map(_u(E)).map(
        lambda v: (v, E.random.uniform([]))),
    "map_repeat": lambda E: E.data.Dataset.range(2).map(_u(E)).repeat(3),
    "repeat_map": lambda E: E.data.Dataset.range(2).repeat(3).map(_u(E)),
    "map_batch_prefetch": lambda E: E.data.Dataset.range(6).map(_u(E)).batch(4).prefetch(2),
    "batch_map": lambda E: E.data.Dataset.range(6).batch(4).map(
        lambda x: E.random.uniform(E.shape(x))),
    "filter": lambda E: E.data.Dataset.range(12).filter(
        lambda x: E.random.uniform([]) < 0.5),
    "flat_map": lambda E: E.data.Dataset.range(3).flat_map(
        lambda x: E.data.Dataset.from_tensors(E.random.uniform([])).repeat(2)),
    "flat_map_inner_map": lambda E: E.data.Dataset.range(2).flat_map(
        lambda x: E.data.Dataset.range(2).map(_u(E))),
    "interleave": lambda E: E.data.Dataset.range(3).interleave(
        lambda x: E.data.Dataset.from_tensors(E.random.uniform([])).repeat(2),
        cycle_length=2),
    "interleave_inner_map": lambda E: E.data.Dataset.range(3).interleave(
        lambda x: E.data.Dataset.range(2).map(lambda y: E.random.normal([])),
        cycle_length=2),
}


# TF warns when a function traced inside another or in a TF1 graph draws unseeded (ipu_gpu
# does not)
_OUTER_SEED_WARNING = "ignore:Seed 1 from outer graph:UserWarning"


@pytest.mark.filterwarnings(_OUTER_SEED_WARNING)
@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_values_are_tensorflows(real_tf, name):
    real_tf.random.set_seed(1)
    want = PIPELINES[name](real_tf)
    tf.random.set_seed(1)
    got = PIPELINES[name](tf)
    expected = _values(want)
    assert _values(got) == expected
    assert _values(got) == _values(want) == expected  # every iteration repeats them


def test_image_and_other_random_ops_in_a_map_are_tensorflows(real_tf):
    """Composite random ops (tf.image.random_*, shuffle, categorical, truncated normal) take
    their trace-time seeds in TF's order."""
    images = np.arange(2 * 5 * 5 * 3, dtype=np.float32).reshape(2, 5, 5, 3)

    def run(E):
        E.random.set_seed(1)
        ds = E.data.Dataset.from_tensor_slices(images).map(lambda x: (
            E.image.random_flip_left_right(x), E.image.random_crop(x, [3, 3, 3]),
            E.random.shuffle(E.range(6)), E.image.random_brightness(x, 0.5),
            E.random.categorical([[0.1, 0.5, 0.2]], 4), E.random.truncated_normal([3]),
            E.image.random_hue(x / 100.0, 0.2), E.image.random_saturation(x / 100.0, 0.5, 1.5)))
        return [[np.asarray(c) for c in element] for element in ds]
    for got, want in zip(run(tf), run(real_tf), strict=True):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings(_OUTER_SEED_WARNING)
def test_parallel_map_gives_the_sequential_values(real_tf):
    """TF's parallel calls race for the kernels (any order of draws); ipu_gpu's draw in
    element order, whatever the threads' timing: TF's sequential values."""
    def fn(E, jitter):
        def f(x):
            if jitter:
                time.sleep(0.001 * (int(x) % 3))  # later elements finish first
            return E.random.uniform(E.reshape(x % 3 + 1, [1])), E.random.normal([])
        return f
    real_tf.random.set_seed(1)
    want = _values(real_tf.data.Dataset.range(40).map(fn(real_tf, False)))
    tf.random.set_seed(1)
    for calls in (2, 4, tf.data.AUTOTUNE):
        for deterministic in (None, True, False):
            ds = tf.data.Dataset.range(40).map(fn(tf, True), num_parallel_calls=calls,
                                               deterministic=deterministic)
            assert _values(ds) == want
    real_tf.random.set_seed(1)
    want = _values(real_tf.data.Dataset.range(3).interleave(
        lambda x: real_tf.data.Dataset.range(2).map(lambda y: real_tf.random.normal([])),
        cycle_length=2))
    tf.random.set_seed(1)
    assert _values(tf.data.Dataset.range(3).interleave(
        lambda x: tf.data.Dataset.range(2).map(lambda y: tf.random.normal([])),
        cycle_length=2, num_parallel_calls=2)) == want


def test_reduce_function_is_traced_once(real_tf):
    def total(E):
        return E.data.Dataset.range(4).reduce(
            np.float32(0), lambda s, x: s + E.random.uniform([]))
    real_tf.random.set_seed(1)
    want = [float(total(real_tf)) for _ in range(2)]
    tf.random.set_seed(1)
    assert [float(total(tf)) for _ in range(2)] == want
    assert want[0] == want[1]


def test_the_global_seed_is_the_one_when_the_dataset_was_made(real_tf):
    out = {}
    for E in (real_tf, tf):
        E.random.set_seed(1)
        ds = E.data.Dataset.range(3).map(_u(E))
        E.random.set_seed(7)
        late = E.data.Dataset.range(3).map(_u(E))
        out[E] = (_values(ds), _values(late))
    assert out[tf] == out[real_tf]
    assert out[tf][0] != out[tf][1]


def test_draws_elsewhere_between_elements_change_nothing(real_tf):
    """Eager draws, another dataset's iteration and a rebuilt pipeline between elements."""
    def interleaved(E):
        E.random.set_seed(1)
        ds = E.data.Dataset.range(5).map(lambda x: E.random.normal([2]))
        first, second = iter(ds), iter(ds)
        out = []
        for _ in range(5):
            out.append(np.asarray(next(first)).tolist())
            E.random.uniform([7])
            next(second)
            E.data.Dataset.range(2).map(_u(E)).element_spec  # noqa: B018
        return out

    def plain(E):
        E.random.set_seed(1)
        return _values(E.data.Dataset.range(5).map(lambda x: E.random.normal([2])))
    assert interleaved(tf) == plain(tf) == plain(real_tf) == interleaved(real_tf)


def test_finding_the_spec_draws_nothing(real_tf):
    """Calls that find the output spec stand for TF's tracing: no kernel or Generator moves."""
    def iterations(E):
        E.random.set_seed(1)
        g = E.random.Generator.from_seed(3)
        ds = E.data.Dataset.range(3).batch(2).map(
            lambda x: (E.random.uniform(E.shape(x)), g.normal([])))
        ds.element_spec  # noqa: B018
        return _values(ds), _values(ds)
    out = {E: iterations(E) for E in (real_tf, tf)}
    assert out[tf] == out[real_tf]
    first, second = out[tf]
    assert [a for a, _ in first] == [a for a, _ in second]  # op kernels: per iteration
    assert [b for _, b in first] != [b for _, b in second]  # the Generator's state goes on


def test_without_any_seed_every_iteration_draws_anew(real_tf):
    """TF seeds unseeded kernels from the OS: iterations differ (as TF, nondeterministic);
    an op seed alone gives (87654321, op seed) in every iteration."""
    ds = tf.data.Dataset.range(8).map(_u(tf))
    assert _values(ds) != _values(ds)
    real_tf.random.set_seed(None)
    want = real_tf.data.Dataset.range(8).map(lambda x: real_tf.random.uniform([], seed=4))
    seeded = tf.data.Dataset.range(8).map(lambda x: tf.random.uniform([], seed=4))
    assert _values(seeded) == _values(seeded) == _values(want)


LAYER_GROUPS = {
    "brightness_flip": lambda K: [K.layers.RandomBrightness(0.5, seed=3),
                                  K.layers.RandomFlip(seed=2)],
    "contrast_translation": lambda K: [K.layers.RandomContrast(0.5),
                                       K.layers.RandomTranslation(0.3, 0.3, seed=1)],
    "rotation_zoom": lambda K: [K.layers.RandomRotation(0.2, seed=4), K.layers.RandomZoom(0.2)],
}


@pytest.mark.parametrize("group", sorted(LAYER_GROUPS))
def test_random_preprocessing_layers_in_map_are_tf_keras(tf_keras, real_tf, group):
    """tf-keras's random layers draw from the layer's own Generator: it goes on across
    iterations, and the spec's probe does not move it."""
    images = np.random.default_rng(0).uniform(0, 255, (4, 6, 6, 3)).astype(np.float32)

    def iterations(E, K):
        E.random.set_seed(1)
        K.utils.set_random_seed(5)
        layers = LAYER_GROUPS[group](K)

        def augment(x):
            for layer in layers:
                x = layer(x, training=True)
            return x
        ds = E.data.Dataset.from_tensor_slices(images).batch(2).map(augment)
        return _values(ds), _values(ds)
    got, want = iterations(tf, tf.keras), iterations(real_tf, tf_keras)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-5, atol=1e-3)
    assert got[0] != got[1]


# ---- shuffle -------------------------------------------------------------------------------


def _orders(E):
    """The properties of TF's shuffle seeds."""
    def order(ds):
        return [int(v) for v in ds]

    def run(global_seed=1, **kwargs):
        E.random.set_seed(global_seed)
        return order(E.data.Dataset.range(16).shuffle(16, **kwargs))

    E.random.set_seed(1)
    unseeded = E.data.Dataset.range(16).shuffle(16)
    rebuilt = E.data.Dataset.range(16).shuffle(16)
    seeded = E.data.Dataset.range(16).shuffle(16, seed=3)
    seeded_rebuilt = E.data.Dataset.range(16).shuffle(16, seed=3)
    fixed = E.data.Dataset.range(16).shuffle(16, seed=3, reshuffle_each_iteration=False)
    epochs = order(E.data.Dataset.range(16).shuffle(16, seed=3).repeat(2))
    first = order(unseeded)
    return {
        "rebuilt in the run differs": order(rebuilt) != first,
        "each iteration differs": order(unseeded) != first,
        "seeded rebuilt is equal": order(seeded) == order(seeded_rebuilt),
        "seeded iterations differ": order(seeded) != order(seeded),
        "fixed iterations are equal": order(fixed) == order(fixed),
        "epochs differ": epochs[:16] != epochs[16:],
        "the same every run": run() == run(),
        "the global seed counts": run(1, seed=3) != run(2, seed=3),
    }


def test_shuffle_seeds_as_tensorflow(real_tf):
    want = _orders(real_tf)
    assert all(want.values()), want
    assert _orders(tf) == want


@pytest.mark.filterwarnings(_OUTER_SEED_WARNING)
def test_shuffle_in_a_function_is_traced_once(real_tf):
    """A shuffle made inside a dataset function takes the traced seed: the same order for
    every input element, and every iteration."""
    def iterations(E):
        E.random.set_seed(1)
        ds = E.data.Dataset.range(3).flat_map(
            lambda x: E.data.Dataset.range(8).shuffle(8).batch(8))
        return _values(ds), _values(ds)
    for runs in (iterations(real_tf), iterations(tf)):
        assert runs[0] == runs[1]
        assert runs[0][0] == runs[0][1] == runs[0][2]


# ---- Keras: the infeed's reading ahead does not change the numbers ---------------------------


def _fit_two_random_datasets(depth):
    from ipu_gpu.ipu import config, utils
    from ipu_gpu.ipu.ipu_strategy import IPUStrategy
    from ipu_gpu.keras import layers, losses, optimizers
    from ipu_gpu.keras.models import Sequential

    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    tf.keras.utils.set_random_seed(3)  # the global seed, and Keras's initializers' seeds
    utils.reset_ipu_seed(5)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(48, 4)).astype(np.float32)
    y = rng.normal(size=(48, 1)).astype(np.float32)

    def noisy(a, b):
        return a + tf.random.normal(tf.shape(a)), b * tf.random.uniform([], 0.5, 1.5)
    train = tf.data.Dataset.from_tensor_slices((x[:32], y[:32])).shuffle(32).batch(
        4, drop_remainder=True).map(noisy).repeat()
    val = tf.data.Dataset.from_tensor_slices((x[32:], y[32:])).batch(
        4, drop_remainder=True).map(noisy)
    with IPUStrategy().scope():
        model = Sequential([layers.Dense(8, activation="relu"), layers.Dropout(0.3),
                            layers.Dense(1)])
        model.compile(optimizers.SGD(0.01), losses.MeanSquaredError(), steps_per_execution=2)
        model.set_infeed_queue_options(prefetch_depth=depth)
        history = model.fit(train, validation_data=val, steps_per_epoch=6, epochs=3,
                            verbose=0)
    return history.history


def test_fit_with_two_randomly_mapped_datasets_is_independent_of_the_prefetch_depth(
        fresh_ipu_system):
    from ipu_gpu.emulation import system

    shallow = _fit_two_random_datasets(1)
    system.reset()
    deep = _fit_two_random_datasets(8)
    assert deep == shallow  # bit for bit: floats compared with ==
    assert len(set(shallow["loss"])) == 3 and len(set(shallow["val_loss"])) == 3


@pytest.mark.filterwarnings(_OUTER_SEED_WARNING)
def test_tf1_initializable_iterator_restarts_the_numbers(real_tf):
    """TF1: the function is traced while the graph is built (with the graph's seed); each run
    of the initializer starts the numbers again."""
    def runs(E):
        v1 = E.compat.v1
        with v1.Graph().as_default():
            v1.set_random_seed(1)
            ds = E.data.Dataset.range(3).map(lambda x: (E.random.uniform([]), x))
            it = v1.data.make_initializable_iterator(ds)
            nxt = it.get_next()
            with v1.Session() as sess:
                out = []
                for _ in range(2):
                    sess.run(it.initializer)
                    out.append([float(sess.run(nxt)[0]) for _ in range(3)])
        return out
    want = runs(real_tf)
    assert want[0] == want[1]
    assert runs(tf) == want


def test_a_dataset_read_inside_an_ipu_program_draws_on_the_host(fresh_ipu_system):
    """A replica reading a dataset (a synchronous infeed) runs its functions on the host:
    TF's numbers, not the replica's IPU stream."""
    from ipu_gpu.ipu import config, ipu_compiler, scopes

    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    tf.random.set_seed(1)
    image = np.full((4, 4, 1), 100.0, np.float32)

    def make():
        layer = tf.keras.layers.RandomBrightness(0.5, seed=3)
        return tf.data.Dataset.range(3).map(
            lambda x: (tf.random.uniform([]), layer(image, training=True)))
    want = _values(make())
    got = []

    def comp():
        got.append(_values(make()))
    with scopes.ipu_scope("/device:IPU:0"):
        ipu_compiler.compile(comp)
    assert got == [want]


def test_a_failing_parallel_map_leaves_no_thread_waiting():
    import threading

    def f(x):
        if int(x) == 5:
            raise ValueError("element 5")
        return tf.random.uniform([])
    tf.random.set_seed(1)
    with pytest.raises(ValueError, match="element 5"):
        _values(tf.data.Dataset.range(200).map(f, num_parallel_calls=4))
    deadline = time.monotonic() + 10
    while any(t.name.startswith("ipu_gpu.data.map") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "a parallel map's thread still waits for its turn"
        time.sleep(0.01)
