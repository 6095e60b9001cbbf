"""A graph loops.repeat feeds the infeed element's leaves to its body as they come
(``IPUInfeedQueue._next_flat``, no nested element packed and flattened again): dict and
nested elements reach the body's arguments as the eager loop gives them."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu.core import nest
from ipu_gpu.ipu import ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, loops, scopes

RNG = np.random.default_rng(1720)
A = RNG.standard_normal((6, 2)).astype(np.float32)
B = RNG.standard_normal((6, 3)).astype(np.float32)
C = RNG.integers(0, 5, 6).astype(np.int32)


def _datasets():
    return {
        "dict": ig.data.Dataset.from_tensor_slices({"b": B, "a": A, "c": C}),
        "nested": ig.data.Dataset.from_tensor_slices(((A, B), C)),
    }


def _value(kind, element):
    """What the test's body computes from one element: sum(a) * 2 + sum(b) - c."""
    if kind == "dict":
        a, b, c = element["a"], element["b"], element["c"]
    else:
        (a, b), c = element
    return ig.reduce_sum(a) * 2.0 + ig.reduce_sum(b) - ig.cast(c, ig.float32)


@pytest.mark.parametrize("kind", ["dict", "nested"])
def test_next_flat_is_the_flattened_element(kind):
    first = ipu_infeed_queue.IPUInfeedQueue(_datasets()[kind])
    second = ipu_infeed_queue.IPUInfeedQueue(_datasets()[kind])
    for _ in range(3):
        want = nest.flatten(first._next_element())
        got = second._next_flat()
        assert type(got) is list and len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
            assert g.dtype == w.dtype


@pytest.mark.parametrize("kind", ["dict", "nested"])
def test_graph_loop_bodies_take_structured_elements(kind, fresh_ipu_system):
    from conftest import configure_ipus

    configure_ipus(1)
    with v1.Graph().as_default():
        infeed = ipu_infeed_queue.IPUInfeedQueue(_datasets()[kind])
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
        if kind == "dict":
            def body(**element):
                return outfeed.enqueue(_value(kind, element))
        else:
            def body(pair, c):
                return outfeed.enqueue(_value(kind, (pair, c)))
        with scopes.ipu_scope("/device:IPU:0"):
            program = ipu_compiler.compile(lambda: loops.repeat(3, body, [], infeed), [])
        dequeue = outfeed.dequeue()
        with v1.Session() as sess:
            sess.run(infeed.initializer)
            sess.run(program)
            sess.run(program)
            got = np.asarray(sess.run(dequeue))
    want = A.sum(1) * 2 + B.sum(1) - C
    np.testing.assert_allclose(got, want, rtol=1e-6)
