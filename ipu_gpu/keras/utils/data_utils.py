"""``keras.utils.get_file`` without a network, and ``keras.utils.Sequence``.

Keras 2.6's cache lookup, hash check and archive extraction (keras/utils/data_utils.py); where
Keras would download, ``get_file`` raises ``CacheMissError`` naming the file, the URL and the
path to save it at. Nothing here opens a connection.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.parse
import zipfile

from .._config import keras_home

_ARCHIVE_KINDS = ("tar", "zip")


class CacheMissError(FileNotFoundError):
    """A file Keras would download is not in its cache, and ipu_gpu never downloads.

    Keras 2.6 raises a plain ``Exception("URL fetch failure on <origin>: ...")`` when its
    download fails; this is an ``Exception`` too (and an ``OSError``), so code catching
    Keras's error catches it. ``fname``, ``origin`` and ``destination`` say what is missing,
    where Keras fetches it from and where to save it.
    """

    def __init__(self, message: str, *, fname: str | None = None, origin: str | None = None,
                 destination: str | None = None):
        super().__init__(message)
        self.fname = fname
        self.origin = origin
        self.destination = destination


def cache_dirs(cache_subdir: str = "datasets", cache_dir: str | os.PathLike | None = None
               ) -> list[str]:
    """The folders ``get_file`` reads, in order; the last is where Keras would download to.

    Keras's rule: the base is ``cache_dir``, by default the Keras home (``$KERAS_HOME`` if
    set, else ``~/.keras``); when the base is not writable (or does not exist) Keras uses
    ``/tmp/.keras`` instead. We read a non-writable base first all the same (a read-only
    shared cache is still a cache), then ``/tmp/.keras``. Keras 2.6 itself ignored
    ``KERAS_HOME`` here (it always used ``~/.keras``); Keras 3 honours it, and so do we.
    """
    if cache_dir is None:
        base = os.path.expanduser(keras_home())
        _makedirs(base)  # Keras creates its home when it is imported
    else:
        base = os.path.expanduser(os.fspath(cache_dir))
    dirs = [os.path.join(base, cache_subdir)]
    if not os.access(base, os.W_OK):
        tmp = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
        dirs.append(os.path.join(tmp, ".keras", cache_subdir))
    _makedirs(dirs[-1])  # as Keras's get_file: the folder to save into exists
    return dirs


def get_file(fname: str | os.PathLike | None = None, origin: str | None = None,
             untar: bool = False, md5_hash: str | None = None, file_hash: str | None = None,
             cache_subdir: str = "datasets", hash_algorithm: str = "auto",
             extract: bool = False, archive_format: str | list[str] | None = "auto",
             cache_dir: str | os.PathLike | None = None) -> str:
    """The path of a file in the Keras cache, as Keras's ``get_file`` returns it.

    Args (Keras 2.6's):
      fname: the file's name in the cache (an absolute path is used as it is); by default
        the last component of ``origin``'s path.
      origin: the URL Keras downloads from; here it only names the source in errors.
      untar: the file is ``<fname>.tar.gz``, extracted to the folder ``<fname>`` (a trailing
        ``.tar.gz`` on ``fname`` is dropped); returns the folder. Deprecated in Keras for
        ``extract``.
      md5_hash: deprecated for ``file_hash``; an md5 hash.
      file_hash: the expected sha256 or md5 hex digest of the cached file.
      cache_subdir: the folder under the cache base (an absolute path is used as it is).
      hash_algorithm: ``"md5"``, ``"sha256"`` or ``"auto"`` (sha256 for a 64-digit hash).
      extract: extract the archive next to it (every call, as Keras); still returns the
        archive's path.
      archive_format: ``"auto"`` (= ``["tar", "zip"]``), ``"tar"``, ``"zip"``, a list of
        those, or None (never extract).
      cache_dir: the cache base; by default ``$KERAS_HOME``, else ``~/.keras`` (see
        ``cache_dirs``).

    Returns:
      The cached file's path (for ``untar``, the extracted folder's).

    Raises:
      CacheMissError: the file is not cached (Keras would download it). With ``untar``, the
        extracted folder alone is enough (Keras 2.6 would download the archive again).
      ValueError: a missing ``origin``; a cached file whose hash is not ``file_hash`` (Keras
        would download it again; the file is left in place); an ``untar`` file that is not
        a tar archive; an unknown ``archive_format``.
    """
    if origin is None:
        raise ValueError('Please specify the "origin" argument (URL of the file to download).')
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    kinds = _archive_kinds(archive_format)
    fname = os.fspath(fname) if fname is not None else None
    if not fname:
        fname = os.path.basename(urllib.parse.urlsplit(origin).path)
        if not fname:
            raise ValueError(f"get_file: can't parse the file name from the origin provided: "
                             f"{origin!r}. Please specify the `fname` argument.")
    if untar and fname.endswith(".tar.gz"):
        fname = fname[: -len(".tar.gz")]
    archive_name = fname + ".tar.gz" if untar else fname

    dirs = cache_dirs(cache_subdir, cache_dir)
    for datadir in dirs:
        fpath = os.path.join(datadir, archive_name)
        untar_fpath = os.path.join(datadir, fname)
        if os.path.exists(fpath) or (untar and os.path.isdir(untar_fpath)):
            break
    else:
        raise _cache_miss(fname, origin, os.path.join(dirs[-1], archive_name),
                          os.path.join(dirs[-1], fname) if untar else None, cache_dir is None)

    if file_hash is not None and os.path.exists(fpath):
        _check_hash(fpath, file_hash, hash_algorithm, origin)
    if untar:
        if not os.path.exists(untar_fpath):
            _extract_once(fpath, datadir, untar_fpath)
        return untar_fpath
    if extract:
        extract_archive(fpath, datadir, kinds)
    return fpath


def validate_file(fpath: str | os.PathLike, file_hash: str, algorithm: str = "auto",
                  chunk_size: int = 65535) -> bool:
    """Whether the file's sha256 or md5 hex digest is ``file_hash`` (Keras's rule for
    ``algorithm``: ``"sha256"``, or ``"auto"`` with a 64-digit hash, means sha256; anything
    else md5)."""
    algorithm = _hash_name(algorithm, file_hash)
    return hash_file(fpath, algorithm, chunk_size) == str(file_hash)


def hash_file(fpath: str | os.PathLike, algorithm: str = "sha256",
              chunk_size: int = 65535) -> str:
    """The file's hex digest (``"sha256"`` or ``"md5"``), read ``chunk_size`` bytes at a time
    (``hashlib.file_digest`` needs Python 3.11)."""
    hasher = hashlib.new(algorithm)
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


def extract_archive(file_path: str | os.PathLike, path: str | os.PathLike = ".",
                    archive_format: str | list[str] | None = "auto") -> bool:
    """Extracts a tar (plain, gz, bz2, xz) or zip archive into ``path``; False if the file
    is none of the formats tried. Tar members that would land outside ``path`` (absolute
    names, ``..``, links out) raise ``tarfile.FilterError``, as Python's "data" filter."""
    for kind in _archive_kinds(archive_format):
        if kind == "tar" and tarfile.is_tarfile(file_path):
            with tarfile.open(file_path) as archive:
                if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4, 3.10.12
                    archive.extractall(path, filter="data")
                else:
                    archive.extractall(path)
            return True
        if kind == "zip" and zipfile.is_zipfile(file_path):
            with zipfile.ZipFile(file_path) as archive:
                archive.extractall(path)  # zipfile drops absolute and ".." components
            return True
    return False


def _archive_kinds(archive_format) -> list[str]:
    if archive_format is None:
        return []
    if archive_format == "auto":
        return list(_ARCHIVE_KINDS)
    kinds = [archive_format] if isinstance(archive_format, str) else list(archive_format)
    for kind in kinds:
        if kind not in _ARCHIVE_KINDS:
            raise ValueError(f"get_file: archive_format must be 'auto', 'tar', 'zip', a list of "
                             f"those or None, got {archive_format!r}")
    return kinds


def _extract_once(fpath: str, datadir: str, untar_fpath: str) -> None:
    """Extracts an ``untar`` archive; a failed extraction leaves no half-written folder
    behind (the folder's existence is what marks the archive as extracted)."""
    try:
        extracted = extract_archive(fpath, datadir, "tar")
    except BaseException:
        if os.path.isdir(untar_fpath):
            shutil.rmtree(untar_fpath)
        raise
    if not extracted:
        raise ValueError(f"get_file: {fpath} is not a tar archive (untar=True)")


def _hash_name(algorithm: str, file_hash: str) -> str:
    if algorithm == "sha256" or (algorithm == "auto" and len(str(file_hash)) == 64):
        return "sha256"
    return "md5"  # Keras: anything else is the legacy md5


def _check_hash(fpath: str, file_hash: str, algorithm: str, origin: str) -> None:
    if validate_file(fpath, file_hash, algorithm):
        return
    raise ValueError(
        f"Incomplete or corrupted file detected. The {_hash_name(algorithm, file_hash)} file "
        f"hash of {fpath} does not match the provided value of {file_hash}. Keras would "
        f"download it again from {origin}; ipu_gpu never downloads: replace the file with a "
        f"copy of that URL.")


def _cache_miss(fname: str, origin: str, target: str, folder: str | None,
                default_cache: bool) -> CacheMissError:
    what = f"{fname!r} is" if folder is None else f"{fname!r} (archive or extracted folder) is"
    where = f"save it as {target}"
    if folder is not None:
        where += f" (or extract it there, giving the folder {folder})"
    rule = (" The Keras cache is $KERAS_HOME if KERAS_HOME is set, else ~/.keras "
            "(/tmp/.keras when that is not writable)." if default_cache else "")
    return CacheMissError(
        f"get_file: {what} not in the Keras cache, and ipu_gpu never downloads. Keras would "
        f"fetch it from {origin}: download that on a machine with network access and "
        f"{where}.{rule}", fname=fname, origin=origin, destination=target)


def _makedirs(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:  # not ours to create (read-only, permissions): only reading matters
        pass


class Sequence:
    """Keras 2's base class for a dataset of batches: ``__getitem__(index)`` gives batch
    ``index`` (``x``, ``(x, y)`` or ``(x, y, sample_weight)``), ``__len__`` the batches per
    epoch. ``fit`` reads the batches in order, or in an order ``random.shuffle`` draws each
    epoch when ``shuffle`` is True (fit's default), and calls ``on_epoch_end`` after each
    epoch. ``workers``/``use_multiprocessing`` are not honoured: batches are read in the
    training thread."""

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def on_epoch_end(self):
        """Called at the end of every epoch."""

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]
