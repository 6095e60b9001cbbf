"""Numba's disk cache notices edits of sibling kernel files a cached kernel calls into."""

import os
import subprocess
import sys
import textwrap

import pytest

from ipu_gpu.kernels import _cache_deps

KERNELS = os.path.dirname(_cache_deps.__file__)


def test_sibling_imports_names_the_files_a_kernel_module_imports():
    deps = {os.path.basename(p) for p in _cache_deps.sibling_imports(
        os.path.join(KERNELS, "conv_cpu.py"))}
    assert {"_conv_direct.py", "_conv_epilogue.py", "_threads.py"} <= deps


def test_dependency_closure_is_transitive():
    closure = {os.path.basename(p) for p in _cache_deps.dependency_closure(
        os.path.join(KERNELS, "pooling_cpu.py"))}
    assert {"pooling_cpu.py", "conv_cpu.py", "_conv_direct.py", "_cache_deps.py"} <= closure


def _write_package(root, helper_value):
    pkg = root / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text(textwrap.dedent(f"""
        from numba import njit

        @njit(cache=True)
        def value():
            return {helper_value}
    """))
    (pkg / "caller.py").write_text(textwrap.dedent("""
        from numba import njit
        from .helper import value

        @njit(cache=True)
        def doubled():
            return 2 * value()
    """))
    return pkg


def test_stamp_changes_when_an_imported_sibling_changes(tmp_path, monkeypatch):
    pkg = _write_package(tmp_path, 1)
    monkeypatch.setattr(_cache_deps, "_PACKAGE_DIR", str(pkg))
    before = _cache_deps.source_stamp(str(pkg / "caller.py"))
    _write_package(tmp_path, 22)
    assert _cache_deps.source_stamp(str(pkg / "caller.py")) != before


_RUN = """
import sys
sys.path.insert(0, {root!r})
from ipu_gpu.kernels import _cache_deps
if {aware}:
    _cache_deps._PACKAGE_DIR = {pkg!r}
    _cache_deps.install()
from pkg.caller import doubled
print(doubled())
"""


def _doubled(tmp_path, aware):
    pkg = str(tmp_path / "pkg")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    code = _RUN.format(root=str(tmp_path), pkg=pkg, aware=aware)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300, check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.parametrize("aware", [pytest.param(False, marks=pytest.mark.slow), True])
def test_cached_caller_recompiles_after_its_helper_changes(tmp_path, aware):
    _write_package(tmp_path, 1)
    assert _doubled(tmp_path, aware) == 2
    _write_package(tmp_path, 5)
    # Numba alone serves the stale cached caller; with the dependency stamps it recompiles.
    assert _doubled(tmp_path, aware) == (10 if aware else 2)


def _defines_jitted(path):
    with open(path, encoding="utf-8") as f:
        return "njit" in f.read()


def _installs(path):
    with open(path, encoding="utf-8") as f:
        return "_cache_deps.install()" in f.read()


def test_every_kernel_calling_into_a_sibling_installs_the_dependency_stamps():
    # A sibling module's imports run before the importer's decorators, so a module is
    # covered when it or any module of its import closure installs the wrapper.
    missing = []
    for name in sorted(os.listdir(KERNELS)):
        path = os.path.join(KERNELS, name)
        if not name.endswith(".py") or not _defines_jitted(path):
            continue
        jitted_deps = [p for p in _cache_deps.sibling_imports(path) if _defines_jitted(p)]
        closure = _cache_deps.dependency_closure(path)
        if jitted_deps and not any(_installs(p) for p in closure):
            missing.append(name)
    assert missing == []
