"""ipu_gpu.keras.datasets and ipu_gpu.keras.utils against the real Keras.

Small files in exactly the formats of Keras's cache are written into a temporary KERAS_HOME;
ipu_gpu's loaders and Keras's (the installed Keras 3, pointed at the same folder, its network
access replaced by a failure) must return equal arrays with equal dtypes and shapes. The fake
files cannot match Keras's published hashes, so both sides' hash checks are switched off there
(and tested on their own). Where Keras 3 departs from Keras 2.6, the Graphcore-era reference,
the test says so and checks Keras 2's behaviour.
"""

from __future__ import annotations

import ast
import contextlib
import gzip
import hashlib
import io
import json
import os
import pickle
import shutil
import socket
import struct
import subprocess
import sys
import tarfile
import urllib.request
import uuid
import zipfile
import zlib

import numpy as np
import pytest

import ipu_gpu
from ipu_gpu.keras.datasets import (boston_housing, cifar10, cifar100, fashion_mnist, imdb,
                                    mnist)
from ipu_gpu.keras.utils import data_utils, get_file, to_categorical

GCS = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------- fixtures

@pytest.fixture
def no_network(monkeypatch):
    """Any connection attempt fails the test: nothing here may touch the network."""
    def refuse(*args, **kwargs):
        raise AssertionError("tried to open a network connection")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)


@pytest.fixture
def home(tmp_path, monkeypatch, no_network):
    """A fresh KERAS_HOME; returns its datasets folder."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    datasets = tmp_path / "keras_home" / "datasets"
    datasets.mkdir(parents=True)
    return datasets


@pytest.fixture
def no_hash(monkeypatch):
    """Our hash check off: the fake files are not Keras's published files."""
    monkeypatch.setattr(data_utils, "validate_file", lambda *args, **kwargs: True)


@pytest.fixture(scope="module")
def keras_module(tmp_path_factory):
    # Keras writes keras.json into its home when imported: keep that out of ~/.keras.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KERAS_HOME", str(tmp_path_factory.mktemp("keras_import_home")))
        return pytest.importorskip("keras")


@pytest.fixture
def keras(keras_module, home, no_hash, monkeypatch):
    """The real Keras reading the same KERAS_HOME, its hash check off and its downloads
    failing loudly (Keras reads its home once, at import: patch the module's copy)."""
    from keras.src.backend import config
    from keras.src.utils import file_utils

    def no_download(url, *args, **kwargs):
        raise AssertionError(f"Keras tried to download {url}")

    monkeypatch.setattr(config, "_KERAS_DIR", str(home.parent))
    monkeypatch.setattr(file_utils, "validate_file", lambda *args, **kwargs: True)
    monkeypatch.setattr(file_utils, "urlretrieve", no_download)
    return keras_module


def assert_same(ours, theirs):
    """Nested tuples of arrays: equal values, dtypes and shapes."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same(a, b)
        return
    assert isinstance(ours, np.ndarray)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    if ours.dtype == object:
        assert ours.tolist() == theirs.tolist()
    else:
        np.testing.assert_array_equal(ours, theirs)


# ---------------------------------------------------------------------------- file writers

def rng_for(name):
    return np.random.default_rng(zlib.crc32(str(name).encode()))


def write_mnist(path, n_train=12, n_test=5):
    rng = rng_for(path)
    np.savez(path, x_train=rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
             y_train=rng.integers(0, 10, n_train, dtype=np.uint8),
             x_test=rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
             y_test=rng.integers(0, 10, n_test, dtype=np.uint8))


def write_idx(path, array):
    """An IDX file (big-endian magic 0x0000080<ndim>, the dims, then uint8 data), gzipped."""
    header = bytes([0, 0, 8, array.ndim]) + b"".join(d.to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())


def write_fashion(datasets, n_train=7, n_test=4):
    folder = datasets / "fashion-mnist"
    folder.mkdir(exist_ok=True)
    rng = rng_for("fashion")
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", rng.integers(0, 10, n, np.uint8))
        write_idx(folder / f"{prefix}-images-idx3-ubyte.gz",
                  rng.integers(0, 256, (n, 28, 28), np.uint8))


class Python2Pickler(pickle._Pickler):
    """Protocol 2 as Python 2 wrote it, bytes as its str opcodes (Python 3's protocol 2 goes
    through ``_codecs.encode``, which the Toronto files never name and Keras refuses)."""

    def save_bytes(self, obj):
        if len(obj) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(obj)]) + obj)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(obj)) + obj)
        self.memoize(obj)

    dispatch = {**pickle._Pickler.dispatch, bytes: save_bytes}


def write_cifar_batch(path, n, label_keys, rng):
    """A CIFAR batch as the Toronto files hold it: a dict with bytes keys, pickled by
    Python 2 (protocol 2)."""
    batch = {b"batch_label": b"fake batch", b"data": rng.integers(0, 256, (n, 3072), np.uint8),
             b"filenames": [b"img%d.png" % i for i in range(n)]}
    for key, classes in label_keys.items():
        batch[key.encode()] = [int(v) for v in rng.integers(0, classes, n)]
    with open(path, "wb") as f:
        Python2Pickler(f, protocol=2).dump(batch)


def write_cifar_tar(tmp_path, cifar100_data=False, n_train=1, n_test=3):
    """The Toronto archive: cifar-10-batches-py/ (five 1-image training batches here, so
    Keras's fixed 50000-row arrays take them by broadcasting) or cifar-100-python/."""
    rng = rng_for(f"cifar{cifar100_data}")
    name = "cifar-100-python" if cifar100_data else "cifar-10-batches-py"
    folder = tmp_path / "build" / name
    folder.mkdir(parents=True)
    if cifar100_data:
        keys = {"fine_labels": 100, "coarse_labels": 20}
        write_cifar_batch(folder / "train", n_train, keys, rng)
        write_cifar_batch(folder / "test", n_test, keys, rng)
    else:
        for i in range(1, 6):
            write_cifar_batch(folder / f"data_batch_{i}", n_train, {"labels": 10}, rng)
        write_cifar_batch(folder / "test_batch", n_test, {"labels": 10}, rng)
    archive = tmp_path / "build" / f"{name}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=name)
    return archive


def write_imdb(path, n_train=9, n_test=6, same_length=False, words=40):
    rng = rng_for(f"imdb{same_length}")

    def sequences(n):
        out = np.empty(n, dtype=object)
        for i in range(n):
            length = 5 if same_length else int(rng.integers(1, 12))
            out[i] = [int(w) for w in rng.integers(1, words, length)]  # Python ints, as Keras's
        return out

    np.savez(path, x_train=sequences(n_train), y_train=rng.integers(0, 2, n_train),
             x_test=sequences(n_test), y_test=rng.integers(0, 2, n_test))


def write_boston(path, n=17):
    rng = rng_for("boston")
    np.savez(path, x=rng.normal(size=(n, 13)), y=rng.normal(20, 5, size=n))


# ---------------------------------------------------------------------------- datasets vs Keras

def test_mnist_matches_keras(home, keras):
    write_mnist(home / "mnist.npz")
    write_mnist(home / "other.npz", n_train=3, n_test=2)
    ours = mnist.load_data()
    assert ours[0][0].shape == (12, 28, 28) and ours[0][0].dtype == np.uint8
    assert_same(ours, keras.datasets.mnist.load_data())
    assert_same(mnist.load_data(path="other.npz"), keras.datasets.mnist.load_data("other.npz"))


def test_fashion_mnist_matches_keras(home, keras):
    write_fashion(home)
    ours = fashion_mnist.load_data()
    assert ours[0][0].shape == (7, 28, 28) and ours[1][1].shape == (4,)
    assert_same(ours, keras.datasets.fashion_mnist.load_data())
    assert not ours[0][0].flags.writeable  # np.frombuffer, as Keras's


def test_cifar10_matches_keras(home, keras, tmp_path):
    archive = write_cifar_tar(tmp_path)
    shutil.copy(archive, home / "cifar-10-batches-py.tar.gz")  # Keras 2's cache name
    shutil.copy(archive, home / "cifar-10-batches-py-target_archive")  # Keras >= 3.6's
    (x, y), test = cifar10.load_data()  # not yet extracted: extracts it
    assert (home / "cifar-10-batches-py" / "test_batch").is_file()
    (kx, ky), ktest = keras.datasets.cifar10.load_data()
    # Keras fills fixed 50000-row arrays 10000 rows per batch; our 1-image batches
    # broadcast into them, so row 10000*i of Keras's is our row i.
    assert x.shape == (5, 32, 32, 3) and y.shape == (5, 1)
    assert_same((x, y), (kx[::10000], ky[::10000]))
    assert x.strides == kx.strides  # a transposed view, as Keras's
    assert_same(test, ktest)
    assert test[0].shape == (3, 32, 32, 3) and test[1].dtype == np.uint8
    # The extracted folder alone is enough, and so is a cache only Keras 3 filled.
    os.remove(home / "cifar-10-batches-py.tar.gz")
    assert_same(cifar10.load_data(), ((x, y), test))
    shutil.rmtree(home / "cifar-10-batches-py")
    assert_same(cifar10.load_data(), ((x, y), test))


@pytest.mark.parametrize("label_mode", ["fine", "coarse"])
def test_cifar100_matches_keras(home, keras, tmp_path, label_mode):
    archive = write_cifar_tar(tmp_path, cifar100_data=True, n_train=6, n_test=4)
    shutil.copy(archive, home / "cifar-100-python.tar.gz")
    shutil.copy(archive, home / "cifar-100-python-target_archive")
    ours = cifar100.load_data(label_mode=label_mode)
    assert ours[0][0].shape == (6, 32, 32, 3) and ours[0][1].dtype == np.int64
    assert_same(ours, keras.datasets.cifar100.load_data(label_mode=label_mode))
    with pytest.raises(ValueError, match="label_mode"):
        cifar100.load_data(label_mode="medium")


def test_cifar_channels_first_from_keras_json(home, keras, tmp_path):
    shutil.copy(write_cifar_tar(tmp_path, cifar100_data=True), home / "cifar-100-python.tar.gz")
    shutil.copy(home / "cifar-100-python.tar.gz", home / "cifar-100-python-target_archive")
    (home.parent / "keras.json").write_text(json.dumps({"image_data_format": "channels_first"}))
    previous = keras.config.image_data_format()
    keras.config.set_image_data_format("channels_first")
    try:
        theirs = keras.datasets.cifar100.load_data()
    finally:
        keras.config.set_image_data_format(previous)
    ours = cifar100.load_data()
    assert ours[0][0].shape == (1, 3, 32, 32)
    assert_same(ours, theirs)


IMDB_CASES = [
    {},
    {"seed": 7},
    {"num_words": 15},
    {"num_words": 15, "skip_top": 5, "seed": 1},
    {"maxlen": 6},
    {"maxlen": 8, "num_words": 20, "skip_top": 2},
    {"index_from": 0, "start_char": 4},
    {"start_char": None, "index_from": 2, "num_words": 25},
    {"oov_char": None, "num_words": 12, "skip_top": 4},
    {"start_char": 7, "oov_char": 9, "index_from": 10, "num_words": 30, "seed": 3},
    # Keras 2.6 added the train and test object arrays elementwise here (a bug Keras 3
    # fixed); we follow Keras 3.
    {"start_char": None, "index_from": 0},
]


@pytest.mark.parametrize("kwargs", IMDB_CASES, ids=[str(c) for c in IMDB_CASES])
def test_imdb_matches_keras(home, keras, kwargs):
    write_imdb(home / "imdb.npz")
    ours = imdb.load_data(**kwargs)
    assert_same(ours, keras.datasets.imdb.load_data(**kwargs))
    assert all(type(w) is int for seq in ours[0][0] for w in seq)


def test_imdb_equal_lengths_and_path(home, keras):
    write_imdb(home / "imdb_same.npz", same_length=True)  # np.array makes a 2-D object array
    ours = imdb.load_data(path="imdb_same.npz", num_words=20)
    assert ours[0][0].shape == (9, 6)
    assert_same(ours, keras.datasets.imdb.load_data(path="imdb_same.npz", num_words=20))


def test_imdb_errors_and_word_index(home, keras, caplog):
    write_imdb(home / "imdb.npz")
    with pytest.raises(ValueError, match="maxlen=2"):
        imdb.load_data(maxlen=2)  # every sequence has start_char + >= 1 word
    with pytest.raises(ValueError, match="maxlen=2"):
        keras.datasets.imdb.load_data(maxlen=2)
    # Keras 2 (not Keras 3, which ignores **kwargs): nb_words is num_words, others TypeError.
    assert_same(imdb.load_data(nb_words=11), imdb.load_data(num_words=11))
    assert "renamed `num_words`" in caplog.text
    with pytest.raises(TypeError, match="num_word"):
        imdb.load_data(num_word=11)
    index = {"the": 1, "and": 2, "a": 3, "movie": 17}
    (home / "imdb_word_index.json").write_text(json.dumps(index))
    assert imdb.get_word_index() == keras.datasets.imdb.get_word_index() == index


def test_imdb_refuses_pickled_code(home, no_hash):
    """Object arrays are unpickled allowing numpy's array reconstruction only."""
    import datetime

    bad = np.empty(2, dtype=object)
    bad[0], bad[1] = [1, 2], datetime.date(2020, 1, 1)
    np.savez(home / "imdb.npz", x_train=bad, y_train=np.zeros(2, np.int64),
             x_test=bad, y_test=np.zeros(2, np.int64))
    with pytest.raises(pickle.UnpicklingError, match="datetime.date"):
        imdb.load_data()


@pytest.mark.parametrize("test_split,seed", [(0.2, 113), (0.0, 113), (0.5, 1), (0.95, 42)])
def test_boston_housing_matches_keras(home, keras, test_split, seed):
    write_boston(home / "boston_housing.npz")
    ours = boston_housing.load_data(test_split=test_split, seed=seed)
    assert ours[0][0].dtype == np.float64 and ours[0][0].shape[1] == 13
    assert_same(ours, keras.datasets.boston_housing.load_data(test_split=test_split, seed=seed))


def test_boston_housing_path_and_bad_split(home, keras):
    write_boston(home / "boston2.npz", n=9)
    assert_same(boston_housing.load_data("boston2.npz"),
                keras.datasets.boston_housing.load_data("boston2.npz"))
    # Keras 2.6 asserted 0 <= test_split < 1 (AssertionError); Keras 3 and we: ValueError.
    for bad in (1.0, -0.1):
        with pytest.raises(ValueError, match="test_split"):
            boston_housing.load_data(test_split=bad)
        with pytest.raises(ValueError, match="test_split"):
            keras.datasets.boston_housing.load_data(test_split=bad)


# ---------------------------------------------------------------------------- missing files

@pytest.mark.parametrize("load,fname,origin,saved_as", [
    (mnist.load_data, "mnist.npz", GCS + "mnist.npz", "mnist.npz"),
    (imdb.load_data, "imdb.npz", GCS + "imdb.npz", "imdb.npz"),
    (imdb.get_word_index, "imdb_word_index.json", GCS + "imdb_word_index.json",
     "imdb_word_index.json"),
    (boston_housing.load_data, "boston_housing.npz", GCS + "boston_housing.npz",
     "boston_housing.npz"),
    (cifar10.load_data, "cifar-10-batches-py",
     "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz", "cifar-10-batches-py.tar.gz"),
    (cifar100.load_data, "cifar-100-python",
     "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz", "cifar-100-python.tar.gz"),
])
def test_missing_file_names_file_url_and_destination(home, load, fname, origin, saved_as):
    with pytest.raises(data_utils.CacheMissError) as info:
        load()
    error = info.value
    assert isinstance(error, FileNotFoundError)  # an OSError, and an Exception as Keras's
    message = str(error)
    destination = str(home / saved_as)
    assert repr(fname) in message and origin in message and destination in message
    assert "never downloads" in message
    assert (error.fname, error.origin, error.destination) == (fname, origin, destination)


def test_missing_fashion_files_listed_together(home):
    with pytest.raises(data_utils.CacheMissError) as info:
        fashion_mnist.load_data()
    lines = [line for line in str(info.value).splitlines() if "->" in line]
    assert len(lines) == 4
    for line, name in zip(lines, ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
                                  "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")):
        assert line.split() == [GCS + name, "->", str(home / "fashion-mnist" / name)]
    write_fashion(home)
    os.remove(home / "fashion-mnist" / "t10k-labels-idx1-ubyte.gz")
    with pytest.raises(data_utils.CacheMissError, match="'t10k-labels-idx1-ubyte.gz' is not"):
        fashion_mnist.load_data()


def test_default_cache_is_home_dot_keras(tmp_path, monkeypatch, no_network):
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(data_utils.CacheMissError) as info:
        mnist.load_data()
    assert info.value.destination == str(tmp_path / ".keras" / "datasets" / "mnist.npz")


# ---------------------------------------------------------------------------- get_file

def test_get_file_path_matches_keras(home, keras):
    (home / "blob.bin").write_bytes(b"blob")
    origin = "https://example.com/data/blob.bin"
    assert get_file(origin=origin) == keras.utils.get_file(origin=origin) == str(home / "blob.bin")
    assert get_file("blob.bin", origin) == keras.utils.get_file("blob.bin", origin)


def test_get_file_cached_and_hashes(home, tmp_path):
    path = home / "blob.bin"
    path.write_bytes(b"ipu_gpu" * 1000)
    origin = "https://example.com/data/blob.bin"
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    md5 = hashlib.md5(path.read_bytes()).hexdigest()
    for kwargs in ({}, {"file_hash": sha256}, {"file_hash": md5}, {"md5_hash": md5},
                   {"file_hash": md5, "hash_algorithm": "md5"}):
        assert get_file("blob.bin", origin, **kwargs) == str(path)
    assert get_file(origin=origin) == str(path)  # fname from the URL
    assert get_file(str(path), origin) == str(path)  # Keras 2: an absolute fname is the path
    for kwargs in ({"file_hash": "0" * 64}, {"md5_hash": "0" * 32},
                   {"file_hash": sha256, "hash_algorithm": "md5"}):
        with pytest.raises(ValueError, match="hash of .*blob.bin does not match"):
            get_file("blob.bin", origin, **kwargs)
    assert path.exists()  # never deleted (Keras deletes it when its download fails)
    with pytest.raises(ValueError, match="origin"):
        get_file("blob.bin")
    with pytest.raises(ValueError, match="fname"):
        get_file(origin="https://example.com/")
    # cache_dir and cache_subdir
    (tmp_path / "mine" / "sub").mkdir(parents=True)
    (tmp_path / "mine" / "sub" / "f.txt").write_text("x")
    assert get_file("f.txt", origin, cache_dir=tmp_path / "mine", cache_subdir="sub") == str(
        tmp_path / "mine" / "sub" / "f.txt")
    assert get_file("f.txt", origin, cache_subdir=str(tmp_path / "mine" / "sub")) == str(
        tmp_path / "mine" / "sub" / "f.txt")


def test_keras_raises_value_error_for_a_wrong_hash(home, keras_module, monkeypatch, no_network):
    """Keras's error for a file whose hash does not match is ValueError (it re-downloads the
    cached file first; here the "download" brings the same bytes). Ours too, without the
    download."""
    from keras.src.backend import config
    from keras.src.utils import file_utils

    path = home / "blob.bin"
    path.write_bytes(b"contents")
    monkeypatch.setattr(config, "_KERAS_DIR", str(home.parent))

    def same_bytes_again(url, target, *args):
        with open(target, "wb") as f:
            f.write(b"contents")

    monkeypatch.setattr(file_utils, "urlretrieve", same_bytes_again)
    with pytest.raises(ValueError, match="hash does not match"):
        keras_module.utils.get_file("blob.bin", "https://example.com/blob.bin",
                                    file_hash="0" * 64)
    with pytest.raises(ValueError, match="hash of .*blob.bin does not match"):
        get_file("blob.bin", "https://example.com/blob.bin", file_hash="0" * 64)


def test_dataset_hash_is_checked(home):
    write_mnist(home / "mnist.npz")
    with pytest.raises(ValueError, match="sha256 file hash of .*mnist.npz") as info:
        mnist.load_data()
    assert GCS + "mnist.npz" in str(info.value)
    assert (home / "mnist.npz").exists()


def make_archive(path, kind, members):
    if kind == "zip":
        with zipfile.ZipFile(path, "w") as z:
            for name, data in members.items():
                z.writestr(name, data)
        return
    with tarfile.open(path, "w:gz" if kind == "tgz" else "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize("kind", ["tar", "tgz", "zip"])
def test_get_file_extract(home, kind):
    make_archive(home / f"arch.{kind}", kind, {"arch/a.txt": b"A", "arch/b/c.txt": b"C"})
    origin = f"https://example.com/arch.{kind}"
    assert get_file(f"arch.{kind}", origin, archive_format=None, extract=True) == str(
        home / f"arch.{kind}")
    assert not (home / "arch").exists()
    other = "zip" if kind != "zip" else "tar"
    get_file(f"arch.{kind}", origin, extract=True, archive_format=other)
    assert not (home / "arch").exists()
    # Keras 2 returns the archive's path after extracting next to it (Keras 3: the folder).
    assert get_file(f"arch.{kind}", origin, extract=True) == str(home / f"arch.{kind}")
    assert (home / "arch" / "b" / "c.txt").read_bytes() == b"C"
    with pytest.raises(ValueError, match="archive_format"):
        get_file(f"arch.{kind}", origin, extract=True, archive_format="rar")


def test_get_file_untar(home):
    make_archive(home / "pack.tar.gz", "tgz", {"pack/x.txt": b"X"})
    origin = "https://example.com/pack.tar.gz"
    assert get_file("pack", origin, untar=True) == str(home / "pack")
    assert get_file("pack.tar.gz", origin, untar=True) == str(home / "pack")
    assert (home / "pack" / "x.txt").read_bytes() == b"X"
    os.remove(home / "pack.tar.gz")
    assert get_file("pack", origin, untar=True) == str(home / "pack")  # the folder suffices
    (home / "junk.tar.gz").write_bytes(b"not a tar archive")
    with pytest.raises(ValueError, match="not a tar archive"):
        get_file("junk", origin, untar=True)
    make_archive(home / "evil.tar.gz", "tgz", {"evil/ok.txt": b"1", "../outside.txt": b"2"})
    with pytest.raises(tarfile.TarError):
        get_file("evil", origin, untar=True)
    assert not (home / "evil").exists() and not (home.parent / "outside.txt").exists()


def test_get_file_tmp_fallback_matches_keras(home, keras, tmp_path):
    """Keras reads /tmp/.keras when the cache base is not writable (or does not exist)."""
    subdir = f"ipu_gpu_test_{uuid.uuid4().hex}"
    fallback = os.path.join("/tmp", ".keras", subdir)
    created_tmp_keras = not os.path.exists(os.path.dirname(fallback))
    os.makedirs(fallback)
    try:
        with open(os.path.join(fallback, "t.txt"), "w") as f:
            f.write("t")
        args = ("t.txt", "https://example.com/t.txt")
        kwargs = {"cache_dir": str(tmp_path / "absent"), "cache_subdir": subdir}
        assert get_file(*args, **kwargs) == os.path.join(fallback, "t.txt")
        assert keras.utils.get_file(*args, **kwargs) == os.path.join(fallback, "t.txt")
        with pytest.raises(data_utils.CacheMissError) as info:
            get_file("u.txt", "https://example.com/u.txt", **kwargs)
        assert info.value.destination == os.path.join(fallback, "u.txt")
    finally:
        shutil.rmtree(fallback)
        if created_tmp_keras:
            with contextlib.suppress(OSError):  # only if empty: /tmp is shared
                os.rmdir(os.path.dirname(fallback))


# ---------------------------------------------------------------------------- to_categorical

CATEGORICAL_CASES = [
    ([0, 2, 1, 2], None),
    ([0, 2, 1, 2], 5),
    ([[1], [0], [3]], None),  # (n, 1) -> (n, classes)
    ([[1, 0, 2], [2, 2, 0]], None),  # (2, 3) -> (2, 3, classes)
    (3, None),
    ([1.7, 0.2, 2.9], None),  # truncated to int
    ([0, -1, 1], 3),  # numpy indexing: -1 is the last class, as in Keras
    (np.array([4, 1], np.uint8), 0),  # 0 classes: inferred
]


@pytest.mark.parametrize("y,num_classes", CATEGORICAL_CASES)
def test_to_categorical_matches_keras(keras_module, y, num_classes):
    theirs = keras_module.utils.to_categorical(y, num_classes)
    ours = to_categorical(y, num_classes)
    # Keras 2's default dtype is float32 (Keras 3 returns float64 and has no dtype argument).
    assert ours.dtype == np.float32 and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    for dtype in ("int32", np.float64, "uint8"):
        np.testing.assert_array_equal(to_categorical(y, num_classes, dtype=dtype), theirs)
        assert to_categorical(y, num_classes, dtype=dtype).dtype == np.dtype(dtype)


def test_to_categorical_errors_and_tensors(keras_module):
    for y, num_classes, error in (([0, 3], 3, IndexError), ([], None, ValueError)):
        with pytest.raises(error):
            keras_module.utils.to_categorical(y, num_classes)
        with pytest.raises(error):
            to_categorical(y, num_classes)
    assert to_categorical([], 4).shape == (0, 4)
    np.testing.assert_array_equal(to_categorical(ipu_gpu.constant([[2], [0]])),
                                  [[0, 0, 1], [1, 0, 0]])


# ---------------------------------------------------------------------------- import cost

def test_import_is_cheap_and_framework_free():
    code = (
        "import sys, time\n"
        "import ipu_gpu.keras\n"
        "assert 'ipu_gpu.keras.datasets' not in sys.modules  # loaded on first use\n"
        "t = time.perf_counter()\n"
        "ipu_gpu.keras.datasets.mnist, ipu_gpu.keras.utils.get_file\n"
        "t = time.perf_counter() - t\n"
        "bad = sorted({m.split('.')[0] for m in sys.modules} & {'tensorflow', 'keras', 'torch'})\n"
        "print(repr((bad, t)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True).stdout
    bad, seconds = ast.literal_eval(out)
    assert bad == []
    assert seconds < 0.5, f"importing ipu_gpu.keras.datasets and utils took {seconds:.2f} s"
