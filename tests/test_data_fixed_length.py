"""tf.data.FixedLengthRecordDataset (E2: most-missed, CIFAR-10 binary readers): the records
equal real TF's for several files, headers, footers, GZIP/ZLIB and interleaved reads, a
numpy reference of the CIFAR layout, and TF's errors."""

from __future__ import annotations

import gzip
import zlib

import numpy as np
import pytest

import ipu_gpu
from ipu_gpu.errors import DataLossError, InvalidArgumentError, NotFoundError

FixedLengthRecordDataset = ipu_gpu.data.FixedLengthRecordDataset


def _write(path, data: bytes, compression=None) -> str:
    if compression == "GZIP":
        data = gzip.compress(data, mtime=0)
    elif compression == "ZLIB":
        data = zlib.compress(data)
    path.write_bytes(data)
    return str(path)


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(3)
    bodies = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in (5 * 6, 2 * 6, 0)]
    return [_write(tmp_path / f"f{i}.bin", b"HDR" + b + b"FT") for i, b in enumerate(bodies)]


@pytest.mark.parametrize("parallel", [None, 1, 2, 3])
def test_records_equal_tf(real_tf, files, parallel):
    ours = [np.asarray(x).item() for x in FixedLengthRecordDataset(
        files, 6, header_bytes=3, footer_bytes=2, num_parallel_reads=parallel)]
    theirs = [x.numpy() for x in real_tf.data.FixedLengthRecordDataset(
        files, 6, header_bytes=3, footer_bytes=2, num_parallel_reads=parallel)]
    assert ours == theirs and len(ours) == 7


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed(real_tf, tmp_path, compression):
    data = b"HDR" + bytes(range(40)) + b"FT"
    path = _write(tmp_path / "c.bin", data, compression)
    ours = [np.asarray(x).item() for x in FixedLengthRecordDataset(
        path, 8, 3, 2, compression_type=compression)]
    theirs = [x.numpy() for x in real_tf.data.FixedLengthRecordDataset(
        path, 8, 3, 2, compression_type=compression)]
    assert ours == theirs == [bytes(range(i, i + 8)) for i in range(0, 40, 8)]


def test_cifar_layout_numpy_reference(tmp_path):
    """numpy reference: label byte + 3x4x4 image, decoded in map as the CIFAR readers do."""
    rng = np.random.default_rng(8)
    labels = rng.integers(0, 10, 5, dtype=np.uint8)
    images = rng.integers(0, 256, (5, 3, 4, 4), dtype=np.uint8)
    data = b"".join(bytes([lab]) + img.tobytes() for lab, img in zip(labels, images))
    path = _write(tmp_path / "data_batch_1.bin", data)

    def parse(record):
        raw = ipu_gpu.io.decode_raw(record, ipu_gpu.uint8)
        label = ipu_gpu.cast(raw[0], ipu_gpu.int32)
        image = ipu_gpu.transpose(ipu_gpu.reshape(raw[1:], [3, 4, 4]), [1, 2, 0])
        return image, label

    ds = FixedLengthRecordDataset([path], 1 + 3 * 4 * 4).map(parse).batch(5)
    assert ds.element_spec[0].shape.as_list() == [None, 4, 4, 3]
    image, label = next(iter(ds))
    np.testing.assert_array_equal(np.asarray(label), labels)
    np.testing.assert_array_equal(np.asarray(image), images.transpose(0, 2, 3, 1))


def test_errors(tmp_path, files):
    with pytest.raises(InvalidArgumentError, match="`record_bytes` must be > 0"):
        FixedLengthRecordDataset(files, 0)
    with pytest.raises(InvalidArgumentError, match="`header_bytes` must be >= 0"):
        FixedLengthRecordDataset(files, 4, header_bytes=-1)
    with pytest.raises(InvalidArgumentError, match="`footer_bytes` must be >= 0"):
        FixedLengthRecordDataset(files, 4, footer_bytes=-2)
    with pytest.raises(InvalidArgumentError, match=r"has body length 30 bytes, which is not an "
                       r"exact multiple of the record length \(7 bytes\)"):
        list(FixedLengthRecordDataset(files[:1], 7, 3, 2))
    short = _write(tmp_path / "short.bin", b"HD")
    with pytest.raises(InvalidArgumentError, match="body length 18446744073709551613 bytes"):
        list(FixedLengthRecordDataset(short, 4, 3, 2))  # TF's unsigned length
    with pytest.raises(DataLossError, match="not an exact multiple"):
        list(FixedLengthRecordDataset(_write(tmp_path / "g.bin", b"x" * 11, "GZIP"), 5,
                                      compression_type="GZIP"))
    with pytest.raises(DataLossError):
        list(FixedLengthRecordDataset(files[0], 6, compression_type="GZIP"))  # not gzip
    with pytest.raises(NotFoundError, match="No such file or directory"):
        list(FixedLengthRecordDataset(str(tmp_path / "nope.bin"), 4))
    ds = FixedLengthRecordDataset([files[0], str(tmp_path / "nope.bin")], 6, 3, 2)
    it = iter(ds)
    assert len([next(it) for _ in range(5)]) == 5  # the missing file raises when reached
    with pytest.raises(NotFoundError):
        next(it)
    assert FixedLengthRecordDataset(files, 6).element_spec == ipu_gpu.TensorSpec(
        [], ipu_gpu.string)
