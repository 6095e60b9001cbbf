"""tf.nest against real TensorFlow's (issue 17)."""

import collections

import numpy as np
import pytest

import ipu_gpu as tf

tf_ref = None  # real TensorFlow, set by the fixture below (oneDNN off, see conftest)


@pytest.fixture(autouse=True)
def _real_tf(real_tf):
    global tf_ref
    tf_ref = real_tf

Point = collections.namedtuple("Point", ["y", "x"])
STRUCTURES = [
    1, None, [], (), {}, [1, (2, 3), {"b": 4, "a": [5, 6]}], Point(y=1, x=(2, 3)),
    {"z": Point(1, 2), "a": [np.zeros(2), None]}, collections.OrderedDict([("k", 1), ("c", 2)]),
    "string is a leaf", np.arange(3),
]


@pytest.mark.parametrize("s", STRUCTURES, ids=range(len(STRUCTURES)))
def test_flatten_pack_is_nested_like_tf(s):
    ours, theirs = tf.nest.flatten(s), tf_ref.nest.flatten(s)
    assert len(ours) == len(theirs)
    assert all(a is b for a, b in zip(ours, theirs))
    assert tf.nest.is_nested(s) == tf_ref.nest.is_nested(s)
    packed = tf.nest.pack_sequence_as(s, list(range(len(ours))))
    expected = tf_ref.nest.pack_sequence_as(s, list(range(len(ours))))
    assert repr(packed) == repr(expected)
    assert type(packed) is type(expected)


def test_map_structure_several_structures_and_order():
    a = {"b": (1, 2), "a": [3]}
    b = {"a": [30], "b": (10, 20)}
    got = tf.nest.map_structure(lambda x, y: x + y, a, b)
    assert got == tf_ref.nest.map_structure(lambda x, y: x + y, a, b) == {"b": (11, 22), "a": [33]}
    assert list(got) == ["b", "a"]
    t = tf.nest.map_structure(tf.square, [tf.constant(2.0), (tf.constant(3.0),)])
    assert float(t[0]) == 4.0 and float(t[1][0]) == 9.0


@pytest.mark.parametrize("a,b", [([1, 2], [1, 2, 3]), ([1, [2]], [1, 2]), ({"a": 1}, {"b": 1}),
                                 ((1, 2), [1, 2]), (Point(1, 2), (1, 2)), ([[1], 2], [1, [2]])])
def test_assert_same_structure_errors_like_tf(a, b):
    try:
        tf_ref.nest.assert_same_structure(a, b)
        expected = None
    except (ValueError, TypeError) as e:
        expected = type(e)
    if expected is None:
        tf.nest.assert_same_structure(a, b)
    else:
        with pytest.raises(expected):
            tf.nest.assert_same_structure(a, b)
    tf.nest.assert_same_structure((1, 2), [3, 4], check_types=False)
    tf_ref.nest.assert_same_structure((1, 2), [3, 4], check_types=False)


def test_pack_errors_like_tf():
    for args in (([1, 2], [1]), ([1, 2], 5), (1, [1, 2])):
        with pytest.raises((ValueError, TypeError)) as theirs:
            tf_ref.nest.pack_sequence_as(*args)
        with pytest.raises(theirs.type):
            tf.nest.pack_sequence_as(*args)
    with pytest.raises(ValueError):
        tf.nest.map_structure(lambda x, y: x, [1], [1, 2])
