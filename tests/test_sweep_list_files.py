"""tf.data.Dataset.list_files (issue 17 sweep) against the real TensorFlow: sorted matches
of every pattern, duplicates kept, shuffling that keeps the set (reproducible with a seed),
TF's error when nothing matches, and the read-every-file pipeline real programs build."""

import re

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu import errors


@pytest.fixture
def files(tmp_path):
    for name in ["b.txt", "a.txt", "c.csv", "d.txt", "sub/e.txt"]:
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"{name} line 1\n{name} line 2\n")
    return tmp_path


@pytest.mark.parametrize("patterns", [
    "*.txt", ["*.txt", "*.csv", "a.txt"], ["*/*.txt"], ["[ab].txt", "?.csv"]])
def test_unshuffled_matches_real_tensorflow(files, patterns, real_tf):
    full = [str(files / p) for p in patterns] if isinstance(patterns, list) \
        else str(files / patterns)
    got = list(ig.data.Dataset.list_files(full, shuffle=False).as_numpy_iterator())
    want = list(real_tf.data.Dataset.list_files(full, shuffle=False).as_numpy_iterator())
    assert got == want
    ds = ig.data.Dataset.list_files(full, shuffle=False)
    assert ds.element_spec == ig.TensorSpec(shape=(), dtype=ig.string)


def test_pattern_as_a_string_tensor_and_bytes(files):
    want = [str(files / n).encode() for n in ("a.txt", "b.txt", "d.txt")]
    for pattern in (ig.constant([str(files / "*.txt")]), str(files / "*.txt").encode(),
                    files / "*.txt"):
        assert list(ig.data.Dataset.list_files(pattern, shuffle=False)
                    .as_numpy_iterator()) == want


def test_shuffle_keeps_the_names_and_a_seed_repeats_the_order(files):
    pattern = str(files / "*")
    want = sorted(list(ig.data.Dataset.list_files(pattern, shuffle=False)
                       .as_numpy_iterator()))
    orders = set()
    for _ in range(2):
        ds = ig.data.Dataset.list_files(pattern, seed=3)  # shuffle defaults to True
        first = list(ds.as_numpy_iterator())
        assert sorted(first) == want
        orders.add(tuple(first))
        # each iteration reshuffles (TF's reshuffle_each_iteration default)
        assert sorted(ds.as_numpy_iterator()) == want
    assert len(orders) == 1  # the same seed, the same first order


def test_no_match_and_bad_patterns(files, real_tf):
    pattern = str(files / "*.zzz")
    msg = re.escape(f"No files matched pattern: {pattern}")
    with pytest.raises(errors.InvalidArgumentError, match=msg):
        ig.data.Dataset.list_files(pattern)
    with pytest.raises(real_tf.errors.InvalidArgumentError, match=msg):
        real_tf.data.Dataset.list_files(pattern)
    two = [pattern, str(files / "*.yyy")]
    with pytest.raises(errors.InvalidArgumentError, match=re.escape(", ".join(two))):
        ig.data.Dataset.list_files(two)
    with pytest.raises(TypeError, match="Cannot convert 3 to EagerTensor of dtype string"):
        ig.data.Dataset.list_files(3)
    with pytest.raises(TypeError, match="Cannot convert 3 to EagerTensor of dtype string"):
        real_tf.data.Dataset.list_files(3)


def test_reading_every_listed_file(files, real_tf):
    """The common pipeline: list_files, then interleave a TextLineDataset per file."""
    def pipeline(tf):
        ds = tf.data.Dataset.list_files(str(files / "*.txt"), shuffle=False)
        return list(ds.interleave(tf.data.TextLineDataset, cycle_length=1)
                    .as_numpy_iterator())
    got = pipeline(ig)
    assert got == pipeline(real_tf)
    assert np.asarray(got).shape == (6,)
