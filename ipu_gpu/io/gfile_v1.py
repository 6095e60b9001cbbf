"""``tf.gfile`` (TF 1.15; also ``tf.compat.v1.gfile``): TF 1's CamelCase names for the local
file functions of ``tf.io.gfile``, with TF's signatures and errors."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from ..errors import AlreadyExistsError, NotFoundError
from . import gfile as _gfile

__all__ = ["Copy", "DeleteRecursively", "Exists", "FastGFile", "FileStatistics", "GFile", "Glob",
           "IsDirectory", "ListDirectory", "MakeDirs", "MkDir", "Open", "Remove", "Rename",
           "Stat", "Walk"]

GFile = _gfile.GFile
Open = _gfile.GFile


def FastGFile(name, mode="r"):  # noqa: N802 - TF's names
    """TF 1's deprecated non-thread-locking file: a ``GFile``."""
    return _gfile.GFile(name, mode)


@dataclass(frozen=True)
class FileStatistics:
    """What ``Stat`` returns: the size in bytes, the modification time in nanoseconds and
    whether the path is a directory."""

    length: int
    mtime_nsec: int
    is_directory: bool


def Exists(filename) -> bool:  # noqa: N802
    return _gfile.exists(filename)


def IsDirectory(dirname) -> bool:  # noqa: N802
    return _gfile.isdir(dirname)


def Glob(filename) -> list:  # noqa: N802
    return _gfile.glob(filename)


def ListDirectory(dirname) -> list:  # noqa: N802
    """The entries of ``dirname``.

    Raises:
      NotFoundError: ``dirname`` is not a directory."""
    if not os.path.isdir(dirname):
        raise NotFoundError(f"Could not find directory {os.fspath(dirname)}")
    return os.listdir(dirname)


def MakeDirs(dirname) -> None:  # noqa: N802
    _gfile.makedirs(dirname)


def MkDir(dirname) -> None:  # noqa: N802
    """Creates ``dirname`` (an existing directory is left as it is, as TF's local file
    system does)."""
    if not os.path.isdir(dirname):
        os.mkdir(dirname)


def Remove(filename) -> None:  # noqa: N802
    _gfile.remove(filename)


def DeleteRecursively(dirname) -> None:  # noqa: N802
    """Deletes ``dirname`` and everything under it (a file is deleted too).

    Raises:
      NotFoundError: ``dirname`` does not exist."""
    if not os.path.exists(dirname):
        raise NotFoundError(f"{os.fspath(dirname)} not found")
    if os.path.isdir(dirname):
        shutil.rmtree(dirname)
    else:
        os.remove(dirname)


def _no_overwrite(dst, overwrite) -> None:
    if not overwrite and os.path.exists(dst):
        raise AlreadyExistsError("file already exists")


def Copy(oldpath, newpath, overwrite=False) -> None:  # noqa: N802
    """Copies a file.

    Raises:
      AlreadyExistsError: ``newpath`` exists and ``overwrite`` is False."""
    _no_overwrite(newpath, overwrite)
    shutil.copyfile(oldpath, newpath)


def Rename(oldname, newname, overwrite=False) -> None:  # noqa: N802
    """Renames a file.

    Raises:
      AlreadyExistsError: ``newname`` exists and ``overwrite`` is False."""
    _no_overwrite(newname, overwrite)
    os.replace(oldname, newname)


def Stat(filename) -> FileStatistics:  # noqa: N802
    """The ``FileStatistics`` of ``filename``.

    Raises:
      NotFoundError: ``filename`` does not exist."""
    if not os.path.exists(filename):
        raise NotFoundError(f"{os.fspath(filename)}; No such file or directory")
    st = os.stat(filename)
    return FileStatistics(length=int(st.st_size), mtime_nsec=int(st.st_mtime_ns),
                          is_directory=os.path.isdir(filename))


def Walk(top, in_order=True):  # noqa: N802
    """``(dirname, subdirectories, files)`` for ``top`` and every directory under it, parents
    first when ``in_order``; nothing for a missing ``top``."""
    return os.walk(top, topdown=in_order)
