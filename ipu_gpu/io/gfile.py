"""``tf.io.gfile``: local files only (TF's file systems for cloud storage are not emulated)."""

from __future__ import annotations

import glob as _glob
import os
import shutil

from ..errors import AlreadyExistsError, NotFoundError

__all__ = ["GFile", "Open", "copy", "exists", "glob", "isdir", "join", "listdir", "makedirs",
           "mkdir", "remove", "rename", "rmtree", "stat", "walk"]


class GFile:
    """``tf.io.gfile.GFile(name, mode="r")``: a local file (text in "r"/"w", bytes in "rb"/"wb")
    with TF's extra ``size()``; a missing file raises ``NotFoundError``."""

    def __init__(self, name, mode: str = "r"):
        self.name = os.fspath(name)
        self.mode = mode
        self._opened = None  # opened on first use, as TF's GFile

    @property
    def _f(self):
        if self._opened is None:
            try:
                self._opened = open(self.name, self.mode)
            except FileNotFoundError:
                raise NotFoundError(f"{self.name}; No such file or directory") from None
        return self._opened

    def size(self) -> int:
        if not os.path.exists(self.name):
            raise NotFoundError(f"{self.name}; No such file or directory")
        return os.path.getsize(self.name)

    def read(self, n: int = -1):
        return self._f.read(n)

    def readline(self):
        return self._f.readline()

    def readlines(self):
        return self._f.readlines()

    def write(self, data):
        return self._f.write(data)

    def seek(self, offset=None, whence=0, position=None):
        return self._f.seek(position if offset is None else offset, whence)

    def tell(self):
        return self._f.tell()

    def flush(self):
        self._f.flush()

    def close(self):
        if self._opened is not None:
            self._opened.close()

    def __iter__(self):
        return iter(self._f)

    def __next__(self):
        return next(self._f)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


Open = GFile


def exists(path) -> bool:
    return os.path.exists(path)


def isdir(path) -> bool:
    return os.path.isdir(path)


def glob(pattern) -> list:
    return sorted(_glob.glob(os.fspath(pattern)))


def listdir(path) -> list:
    if not os.path.isdir(path):
        raise NotFoundError(f"{path}; No such file or directory")
    return os.listdir(path)


def makedirs(path) -> None:
    os.makedirs(path, exist_ok=True)


def mkdir(path) -> None:
    os.mkdir(path)


def remove(path) -> None:
    if not os.path.exists(path):
        raise NotFoundError(f"{path}; No such file or directory")
    os.remove(path)


def rmtree(path) -> None:
    shutil.rmtree(path)


def rename(src, dst, overwrite: bool = False) -> None:
    if not overwrite and os.path.exists(dst):
        raise AlreadyExistsError(f"{dst}; File exists")
    os.replace(src, dst)


def copy(src, dst, overwrite: bool = False) -> None:
    if not overwrite and os.path.exists(dst):
        raise AlreadyExistsError(f"{dst}; File exists")
    shutil.copyfile(src, dst)


def join(path, *paths) -> str:
    return os.path.join(path, *paths)


def stat(path):
    return os.stat(path)


def walk(top, topdown: bool = True, onerror=None):
    return os.walk(top, topdown=topdown, onerror=onerror)
