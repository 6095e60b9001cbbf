"""TF1 graphs with strings: string placeholders fed Python str/bytes, string constants and
tf.strings ops fetched by Session.run, against real tf.compat.v1."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf

rtf = None  # real TensorFlow, set by the fixture below


@pytest.fixture(autouse=True, scope="module")
def _oracle(real_tf):
    global rtf
    rtf = real_tf


def _build(m):
    v1 = m.compat.v1
    p = v1.placeholder(m.string, shape=[None])
    q = v1.placeholder(m.string, shape=[])
    c = m.constant(["x", "y"])
    return p, q, {
        "const": c,
        "upper": m.strings.upper(p),
        "length": m.strings.length(p, unit="UTF8_CHAR"),
        "equal": m.equal(p, "a"),
        "join": m.strings.join([p, c], separator="-"),
        "number": m.strings.to_number(q),
        "identity": m.identity(p),
        "reduce_join": m.strings.reduce_join(p, separator=","),
        "concat": p + "!",
        "hash": m.strings.to_hash_bucket_fast(p, 10),
        "regex": m.strings.regex_replace(p, "[aeiou]", "_"),
        "where": m.where(m.equal(p, "a"), p, c),
    }


@pytest.mark.parametrize("feed", [["a", "bé"], [b"a", b"xyz"]])
def test_session_run_matches_tf1(feed):
    results = []
    for m in (tf, rtf):
        graph = m.compat.v1.Graph()
        with graph.as_default():
            p, q, nodes = _build(m)
            with m.compat.v1.Session(graph=graph) as sess:
                results.append(sess.run(nodes, {p: feed, q: "2.5"}))
    ours, theirs = results
    assert set(ours) == set(theirs)
    for key in theirs:
        o, t = ours[key], theirs[key]
        if isinstance(t, bytes):
            assert o == t, key
        else:
            o, t = np.asarray(o), np.asarray(t)
            assert o.dtype == t.dtype and o.shape == t.shape, key
            np.testing.assert_array_equal(o, t, err_msg=key)


def test_split_in_a_graph_refused_clearly():
    graph = tf.compat.v1.Graph()
    with graph.as_default():
        p = tf.compat.v1.placeholder(tf.string, shape=[None])
        with pytest.raises(TypeError, match="RaggedTensor"):
            tf.strings.split(p)
