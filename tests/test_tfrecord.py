"""TFRecord files, CRC-32C, tf.train.Example and parsing: against a bitwise reference and
against real TensorFlow (files written by TF read by ipu_gpu and the other way round)."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import numpy as np
import pytest

import ipu_gpu.data as idata
import ipu_gpu.io as iio
from ipu_gpu import errors
from ipu_gpu.io._crc32c import crc32c, masked_crc32c

G = np.random.default_rng(7)


def _crc32c_reference(data: bytes) -> int:
    """Bit-by-bit CRC-32C (RFC 3720), no tables."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 15, 16, 17, 100, 1001])
def test_crc32c_against_bitwise_reference(n):
    data = G.integers(0, 256, n, dtype=np.uint8).tobytes()
    assert crc32c(data) == _crc32c_reference(data)
    assert crc32c(data[n // 2:], crc32c(data[:n // 2])) == crc32c(data)  # continues


def test_crc32c_known_values():
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert crc32c(b"") == 0
    # TFRecord's masked CRCs of a record b"hello", as TensorFlow writes them
    assert masked_crc32c(struct.pack("<Q", 5)) == 0x3E04B2EA
    assert masked_crc32c(b"hello") == 0x191C1FBB


# ---- records ----------------------------------------------------------------------------------
RECORDS = [b"hello", b"", bytes(range(256)) * 3, b"\x00" * 17]


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_tf_writes_we_read(tmp_path, real_tf, compression):
    path = str(tmp_path / "tf.tfrecord")
    with real_tf.io.TFRecordWriter(path, options=compression) as w:
        for r in RECORDS:
            w.write(r)
    ds = idata.TFRecordDataset(path, compression_type=compression)
    assert list(ds.as_numpy_iterator()) == RECORDS
    assert list(iio.tf_record_iterator(path, compression)) == RECORDS
    tfs = real_tf.data.TFRecordDataset(path, compression_type=compression)
    assert int(ds.cardinality()) == int(tfs.cardinality().numpy()) == idata.UNKNOWN_CARDINALITY
    assert ds.element_spec.shape.as_list() == [] and ds.element_spec.dtype == np.dtype(object)


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_we_write_tf_reads(tmp_path, real_tf, compression):
    path = str(tmp_path / "ours.tfrecord")
    with iio.TFRecordWriter(path, iio.TFRecordOptions(compression_type=compression)) as w:
        for r in RECORDS:
            w.write(r)
    got = list(real_tf.data.TFRecordDataset(path, compression_type=compression)
               .as_numpy_iterator())
    assert got == RECORDS
    assert list(idata.TFRecordDataset(path, compression).as_numpy_iterator()) == RECORDS
    if compression == "":  # the same bytes as TensorFlow's writer
        tf_path = str(tmp_path / "tf.tfrecord")
        with real_tf.io.TFRecordWriter(tf_path) as w:
            for r in RECORDS:
                w.write(r)
        with open(path, "rb") as a, open(tf_path, "rb") as b:
            assert a.read() == b.read()


def _file(tmp_path, data: bytes) -> str:
    p = tmp_path / "x.tfrecord"
    p.write_bytes(data)
    return str(p)


def _read(path):
    return list(idata.TFRecordDataset(path).as_numpy_iterator())


def test_corrupt_and_truncated_records(tmp_path, real_tf):
    good = b"".join(iio.tfrecord.encode_record(r) for r in [b"hello", b"", b"x" * 100])
    cases = {
        "truncated data": good[:15],
        "truncated footer": good[:19],
        "truncated second header": good[:26],
        "flipped data": good[:12] + b"hellp" + good[17:],
        "flipped length crc": good[:8] + b"\0\0\0\0" + good[12:],
        "extra byte": good + b"\x00",
        "not a tfrecord": b"\x05\x00\x00\x00\x00\x00\x00\x00abcdabcdabcdabcd",
    }
    for name, data in cases.items():
        path = _file(tmp_path, data)
        try:
            want = list(real_tf.data.TFRecordDataset(path).as_numpy_iterator())
        except real_tf.errors.DataLossError as e:
            with pytest.raises(iio.DataLossError) as got:
                _read(path)
            # same position in the message ("corrupted record at 12", "truncated record at 0")
            assert str(got.value).split("'")[0].split(" (")[0] in e.message, name
            continue
        assert _read(path) == want, name
    with pytest.raises(iio.NotFoundError, match="No such file"):
        _read(str(tmp_path / "missing.tfrecord"))


def test_parallel_reads_and_dataset_of_names(tmp_path, real_tf):
    paths = []
    for f in range(3):
        p = str(tmp_path / f"f{f}.tfrecord")
        with iio.TFRecordWriter(p) as w:
            for i in range(f + 2):
                w.write(f"{f}-{i}".encode())
        paths.append(p)
    for kw in ({}, {"num_parallel_reads": 2}, {"num_parallel_reads": 3}):
        mine = list(idata.TFRecordDataset(paths, **kw).as_numpy_iterator())
        tfs = list(real_tf.data.TFRecordDataset(paths, **kw).as_numpy_iterator())
        assert mine == tfs, kw
    names = idata.Dataset.from_tensor_slices(paths).skip(1)
    assert list(idata.TFRecordDataset(names).as_numpy_iterator())[0] == b"1-0"


def test_experimental_writer_writes_a_dataset(tmp_path, real_tf):
    path = str(tmp_path / "ds.tfrecord")
    idata.experimental.TFRecordWriter(path).write(idata.Dataset.from_tensor_slices(["a", "bc"]))
    assert list(real_tf.data.TFRecordDataset(path).as_numpy_iterator()) == [b"a", b"bc"]
    with pytest.raises(TypeError, match="string scalars"):
        idata.experimental.TFRecordWriter(path).write(idata.Dataset.range(2))


# ---- tf.train.Example -------------------------------------------------------------------------
def _make_example(train, i=0):
    return train.Example(features=train.Features(feature={
        "image": train.Feature(bytes_list=train.BytesList(value=[bytes([i, 1, 2, 255])])),
        "label": train.Feature(int64_list=train.Int64List(value=[i, -3, 2**40, -(2**63)])),
        "scores": train.Feature(float_list=train.FloatList(value=[0.5, -1.25, 3.0e38, i])),
        "name": train.Feature(bytes_list=train.BytesList(value=[b"a", b"", "é".encode()])),
        "empty_floats": train.Feature(float_list=train.FloatList(value=[])),
    }))


def _feature_values(example):
    out = {}
    for key, f in example.features.feature.items():
        kind = f.WhichOneof("kind")
        out[key] = (kind, list(getattr(f, kind).value) if kind else None)
    return out


def test_example_round_trips_with_tensorflow(real_tf):
    ours = _make_example(iio, 3)
    theirs = real_tf.train.Example.FromString(ours.SerializeToString())
    assert _feature_values(theirs) == _feature_values(ours)
    back = iio.Example.FromString(_make_example(real_tf.train, 3).SerializeToString())
    assert _feature_values(back) == _feature_values(ours) and back == ours
    assert iio.Example.FromString(b"") == iio.Example()
    assert str(iio.Example(features=iio.Features(feature={"x": iio.Feature(
        int64_list=iio.Int64List(value=[1]))}))) == str(real_tf.train.Example(
            features=real_tf.train.Features(feature={"x": real_tf.train.Feature(
                int64_list=real_tf.train.Int64List(value=[1]))})))


def test_example_builds_like_protobuf():
    ex = iio.Example()
    ex.features.feature["x"].float_list.value.append(1.5)
    ex.features.feature["y"].int64_list.value.extend([1, 2])
    assert _feature_values(iio.Example.FromString(ex.SerializeToString())) == {
        "x": ("float_list", [1.5]), "y": ("int64_list", [1, 2])}
    with pytest.raises(TypeError):
        iio.BytesList(value=["text"])
    with pytest.raises(TypeError):
        iio.Int64List(value=[1.5])
    with pytest.raises(TypeError):
        iio.Feature(float_list=iio.Int64List(value=[1]))


def test_unpacked_repeated_fields_are_read():
    # FloatList/Int64List written unpacked (one tag per value), as older writers may do
    floats = b"".join(b"\x0d" + struct.pack("<f", v) for v in (1.0, 2.5))
    ints = b"".join(b"\x08" + iio.example._varint(v) for v in (7, -1))
    feature_f = iio.example._field(2, floats)
    feature_i = iio.example._field(3, ints)
    entry = lambda k, f: iio.example._field(  # noqa: E731
        1, iio.example._field(1, k) + iio.example._field(2, f))
    data = iio.example._field(1, entry(b"f", feature_f) + entry(b"i", feature_i))
    got = iio.parse_single_example(data, {"f": iio.FixedLenFeature([2], np.float32),
                                          "i": iio.FixedLenFeature([2], np.int64)})
    np.testing.assert_array_equal(got["f"].numpy(), [1.0, 2.5])
    np.testing.assert_array_equal(got["i"].numpy(), [7, -1])


# ---- parsing ----------------------------------------------------------------------------------
OUR_TYPES = SimpleNamespace(float32=np.float32, int64=np.int64, string="string")


def _spec(io_mod, t):
    """The same feature configuration for ``io_mod`` (ours or tf.io) with dtypes from ``t``."""
    return {
        "image": io_mod.FixedLenFeature([], t.string),
        "label": io_mod.FixedLenFeature([4], t.int64),
        "scores": io_mod.FixedLenFeature([2, 2], t.float32),
        "name": io_mod.VarLenFeature(t.string),
        "missing": io_mod.FixedLenFeature([2], t.float32, default_value=[9.0, 8.0]),
        "seq": io_mod.FixedLenSequenceFeature([], t.float32, allow_missing=True),
    }


def _dense(v):
    if hasattr(v, "dense_shape"):  # a SparseTensor (ours or TF's)
        return (np.asarray(v.indices).tolist(), np.asarray(v.values).tolist(),
                np.asarray(v.dense_shape).tolist())
    return np.asarray(v)


def _compare(mine: dict, theirs: dict):
    assert sorted(mine) == sorted(theirs)
    for k in theirs:
        a, b = _dense(mine[k]), _dense(theirs[k])
        if isinstance(b, tuple):
            assert a == b, k
        else:
            assert a.shape == b.shape and a.dtype == b.dtype, (k, a, b)
            assert a.tolist() == b.tolist(), k


def test_parse_single_example_against_tensorflow(real_tf):
    data = _make_example(iio, 5).SerializeToString()
    mine = iio.parse_single_example(data, _spec(iio, OUR_TYPES))
    theirs = real_tf.io.parse_single_example(data, _spec(real_tf.io, real_tf))
    _compare(mine, theirs)
    assert isinstance(mine["name"], iio.SparseTensor)
    np.testing.assert_array_equal(
        np.asarray(iio.sparse.to_dense(mine["name"])._value).tolist(), [b"a", b"", "é".encode()])


def test_parse_example_batch_against_tensorflow(real_tf):
    items = [_make_example(iio, i).SerializeToString() for i in range(3)]
    short = iio.Example(features=iio.Features(feature={k: v for k, v in _make_example(
        iio, 9).features.feature.items() if k != "name"}))
    short.features.feature["seq"].float_list.value.extend([1.0, 2.0, 3.0])
    items.append(short.SerializeToString())
    mine = iio.parse_example(np.array(items, dtype=object), _spec(iio, OUR_TYPES))
    theirs = real_tf.io.parse_example(items, _spec(real_tf.io, real_tf))
    _compare(mine, theirs)


PARSE_ERRORS = {
    "required_missing": ("nope", lambda m, t: m.FixedLenFeature([], t.float32)),
    "wrong_count": ("label", lambda m, t: m.FixedLenFeature([2], t.int64)),
    "wrong_type": ("label", lambda m, t: m.FixedLenFeature([4], t.float32)),
    "varlen_wrong_type": ("scores", lambda m, t: m.VarLenFeature(t.int64)),
}


@pytest.mark.parametrize("name", list(PARSE_ERRORS))
def test_parse_errors_against_tensorflow(name, real_tf):
    key, make = PARSE_ERRORS[name]
    data = _make_example(iio).SerializeToString()
    with pytest.raises(real_tf.errors.InvalidArgumentError) as theirs:
        real_tf.io.parse_single_example(data, {key: make(real_tf.io, real_tf)})
    with pytest.raises(errors.InvalidArgumentError) as mine:
        iio.parse_single_example(data, {key: make(iio, OUR_TYPES)})
    first_words = str(mine.value).split(".")[0]
    assert first_words in theirs.value.message


def test_parse_garbage_raises():
    with pytest.raises(errors.InvalidArgumentError, match="Could not parse example"):
        iio.parse_single_example(b"\xff\xff\xff", {"x": iio.FixedLenFeature([], np.int64)})
    with pytest.raises(ValueError, match="Unsupported dtype"):
        iio.FixedLenFeature([], np.int32)
    with pytest.raises(ValueError, match="requires allow_missing to be True"):
        iio.parse_single_example(b"", {"x": iio.FixedLenSequenceFeature([], np.int64)})


def test_tfrecord_pipeline_against_tensorflow(tmp_path, real_tf):
    """The TF tutorial pipeline: examples written by each side, read, parsed, batched."""
    for writer in (iio, real_tf.io):
        path = str(tmp_path / f"{writer.__name__}.tfrecord")
        train = iio if writer is iio else real_tf.train
        with writer.TFRecordWriter(path) as w:
            for i in range(5):
                w.write(_make_example(train, i).SerializeToString())
        dense = ("image", "label", "scores", "missing")
        features = {k: v for k, v in _spec(iio, OUR_TYPES).items() if k in dense}
        tf_features = {k: v for k, v in _spec(real_tf.io, real_tf).items() if k in dense}
        mine = idata.TFRecordDataset(path).map(
            lambda r, f=features: iio.parse_single_example(r, f)).batch(2)
        tfs = real_tf.data.TFRecordDataset(path).map(
            lambda r, f=tf_features: real_tf.io.parse_single_example(r, f)).batch(2)
        mine_spec = {k: (s.shape.as_list(), s.dtype) for k, s in mine.element_spec.items()}
        tf_spec = {k: (s.shape.as_list(), np.dtype(object) if s.dtype == real_tf.string
                       else np.dtype(s.dtype.as_numpy_dtype))
                   for k, s in tfs.element_spec.items()}
        assert mine_spec == tf_spec
        got, want = list(mine.as_numpy_iterator()), list(tfs.as_numpy_iterator())
        assert len(got) == len(want) == 3
        for g, w in zip(got, want):
            _compare(g, w)


def test_decode_raw_against_tensorflow(real_tf):
    raw = np.array([np.arange(4, dtype="<i4").tobytes(),
                    np.arange(4, 8, dtype="<i4").tobytes()], dtype=object)
    for out_type, tf_type in ((np.int32, real_tf.int32), (np.uint8, real_tf.uint8),
                              (np.float32, real_tf.float32)):
        mine = iio.decode_raw(raw, out_type)
        theirs = real_tf.io.decode_raw(list(raw), tf_type)
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
        assert mine.dtype == np.dtype(out_type)
    big = iio.decode_raw(raw[0], np.int32, little_endian=False)
    np.testing.assert_array_equal(big.numpy(), real_tf.io.decode_raw(
        raw[0], real_tf.int32, little_endian=False).numpy())
    with pytest.raises(errors.InvalidArgumentError, match="same size"):
        iio.decode_raw(np.array([b"ab", b"abcd"], dtype=object), np.uint8)


def test_gfile(tmp_path):
    p = tmp_path / "sub" / "f.txt"
    iio.gfile.makedirs(str(p.parent))
    with iio.gfile.GFile(str(p), "w") as f:
        f.write("line1\nline2\n")
    assert iio.gfile.exists(str(p)) and iio.gfile.GFile(str(p)).size() == 12  # never opened
    with iio.gfile.GFile(str(p), "rb") as f:
        assert f.read() == b"line1\nline2\n"
    assert iio.gfile.glob(str(tmp_path / "sub" / "*.txt")) == [str(p)]
    iio.gfile.remove(str(p))
    with pytest.raises(iio.NotFoundError):
        iio.gfile.GFile(str(p)).read()


# ---- VarLenFeature in a dataset: tf.sparse.to_dense ----------------------------------------------
def _varlen_records(path):
    with iio.TFRecordWriter(str(path)) as w:
        for values in ([1, 2, 3], [4], []):
            w.write(iio.Example(features=iio.Features(feature={"v": iio.Feature(
                int64_list=iio.Int64List(value=values))})).SerializeToString())


def test_varlen_features_densify_inside_map_as_tf_programs_do(tmp_path):
    import ipu_gpu as tf

    _varlen_records(tmp_path / "r.tfrecord")

    def parse(record):
        ex = tf.io.parse_single_example(record, {"v": tf.io.VarLenFeature(tf.int64)})
        return tf.sparse.to_dense(ex["v"])

    ds = tf.data.TFRecordDataset(str(tmp_path / "r.tfrecord")).map(parse)
    assert [list(e) for e in ds.as_numpy_iterator()] == [[1, 2, 3], [4], []]
    assert isinstance(tf.io.parse_single_example(
        next(iter(tf.data.TFRecordDataset(str(tmp_path / "r.tfrecord")))),
        {"v": tf.io.VarLenFeature(tf.int64)})["v"], tf.SparseTensor)


def test_a_sparse_dataset_component_is_refused_with_the_fix_in_the_message(tmp_path):
    import ipu_gpu as tf

    _varlen_records(tmp_path / "r.tfrecord")
    ds = tf.data.TFRecordDataset(str(tmp_path / "r.tfrecord")).map(
        lambda r: tf.io.parse_single_example(r, {"v": tf.io.VarLenFeature(tf.int64)})["v"])
    with pytest.raises(NotImplementedError, match="SparseTensor components are not supported.*"
                       "tf.sparse.to_dense"):
        list(ds.as_numpy_iterator())


def test_to_dense_errors_and_default(real_tf):
    import ipu_gpu as tf

    sp = tf.SparseTensor([[0, 1], [2, 0]], np.array([5, 6], np.int64), [3, 2])
    got = tf.sparse.to_dense(sp, default_value=-1).numpy()
    want = real_tf.sparse.to_dense(real_tf.SparseTensor([[0, 1], [2, 0]], np.array(
        [5, 6], np.int64), [3, 2]), default_value=-1).numpy()
    np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError, match="sp_input must be a SparseTensor"):
        tf.sparse.to_dense(np.zeros(3))
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1\] = \[3, 0\] is out of "
                       "bounds"):
        tf.sparse.to_dense(tf.SparseTensor([[0, 1], [3, 0]], np.array([5, 6], np.int64),
                                           [3, 2]))
