"""Numba's on-disk cache, made to notice edits of the kernel files a kernel calls into.

Numba keys a cached kernel on its own source file only, yet a jitted function compiled
against a jitted helper from a sibling file (``from .ctc_decoder_prefix import copy_beam``)
carries the helper's machine code inside it. Editing the helper's file then leaves the
caller's cached kernel stale until the caller's own file changes. ``install()`` wraps
Numba's cache locators so that, for files of this package, the source stamp also covers
every sibling module the file imports (transitively). A kernel module that imports jitted
helpers from a sibling calls ``install()`` before its first ``@njit(cache=True)``.

Numba's locator classes are internal; where this Numba has none of the expected names the
wrapper stays off and caching behaves as Numba's own.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_SIBLING_IMPORT = re.compile(r"^from \.(\w*) import ([\w, ()]+)", re.MULTILINE)
_installed = False


@functools.cache
def _file_digest(path: str, mtime_ns: int, size: int) -> bytes:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).digest()


def sibling_imports(path: str) -> list[str]:
    """The files of this package that the module at ``path`` imports, directly."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = []
    for module, names in _SIBLING_IMPORT.findall(text):
        candidates = [module] if module else [n.strip() for n in names.strip("()").split(",")]
        for name in candidates:
            file = os.path.join(_PACKAGE_DIR, name + ".py")
            if name and os.path.isfile(file):
                found.append(file)
    return found


@functools.cache
def _closure(path: str) -> tuple[str, ...]:
    return tuple(dependency_closure(path))


def dependency_closure(path: str) -> list[str]:
    """``path`` and every sibling module it imports, directly or not, sorted."""
    seen = {os.path.abspath(path)}
    todo = [os.path.abspath(path)]
    while todo:
        for dep in sibling_imports(todo.pop()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return sorted(seen)


def source_stamp(path: str) -> bytes:
    """A digest of the contents of ``path`` and of every sibling module it depends on."""
    digest = hashlib.sha256()
    for file in _closure(os.path.abspath(path)):
        st = os.stat(file)
        digest.update(os.path.basename(file).encode())
        digest.update(_file_digest(file, st.st_mtime_ns, st.st_size))
    return digest.digest()


def _with_dependencies(locator_class):
    class DependencyAwareLocator(locator_class):
        def get_source_stamp(self):
            py_file = os.path.abspath(getattr(self, "_py_file", "") or "")
            if os.path.dirname(py_file) != _PACKAGE_DIR or not os.path.isfile(py_file):
                return super().get_source_stamp()
            return source_stamp(py_file)

    DependencyAwareLocator.__name__ = DependencyAwareLocator.__qualname__ = (
        "DependencyAware" + locator_class.__name__)
    return DependencyAwareLocator


def install() -> bool:
    """Wrap Numba's cache locators once; True when the wrapper is active."""
    global _installed
    if _installed:
        return True
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    if not classes:
        return False
    impl._locator_classes = [_with_dependencies(cls) for cls in classes]
    _installed = True
    return True
