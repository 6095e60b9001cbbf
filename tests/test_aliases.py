"""ipu_gpu.aliases: the import hook that maps TensorFlow / Keras / Graphcore / PopTorch module
names onto ipu_gpu, its named errors, install/uninstall, and TF1/TF2 detection."""

from __future__ import annotations

import sys
import threading
import types

import pytest

import ipu_gpu
from ipu_gpu import aliases
from ipu_gpu.compat import behavior


@pytest.fixture
def hooked():
    """Aliases installed for the test (and removed after), TF version unset."""
    behavior.set_tf_version(None)
    with aliases.installed():
        yield
    behavior.set_tf_version(None)


def _import(name):
    __import__(name)
    return sys.modules[name]


def test_documented_import_forms_resolve_to_ipu_gpu(hooked):
    tf = _import("tensorflow")
    assert tf.constant is ipu_gpu.constant and tf.float16 is ipu_gpu.float16
    assert tf.nn.relu is ipu_gpu.nn.relu and tf.math.log is ipu_gpu.math.log
    ns = {}
    exec("from tensorflow.python import ipu\n"
         "from tensorflow.python.ipu import ipu_compiler, loops, scopes\n"
         "from tensorflow.python.ipu.config import IPUConfig\n"
         "from tensorflow.python.ipu.ops import nn_ops\n"
         "from tensorflow.python.ipu.ops.nn_ops import ctc_loss_v2\n"
         "import tensorflow.python.ipu.embedding_ops as embedding_ops\n"
         "import tensorflow.compat.v1 as tf1\n"
         "from tensorflow.python.framework import errors\n", ns)
    assert ns["IPUConfig"] is ipu_gpu.ipu.config.IPUConfig
    assert ns["ipu_compiler"].compile is ipu_gpu.ipu.ipu_compiler.compile
    assert ns["ctc_loss_v2"] is ipu_gpu.ipu.nn_ops.ctc_loss_v2
    assert ns["nn_ops"].ctc_loss_v2 is ipu_gpu.ipu.nn_ops.ctc_loss_v2
    assert ns["embedding_ops"].embedding_lookup is ipu_gpu.ipu.embedding_ops.embedding_lookup
    assert ns["ipu"].loops.repeat is ipu_gpu.ipu.loops.repeat
    assert ns["tf1"].disable_v2_behavior is behavior.disable_v2_behavior
    assert ns["errors"].OutOfRangeError is ipu_gpu.errors.OutOfRangeError


def test_internal_module_paths_programs_import_resolve(hooked):
    """Paths Graphcore's tutorials import from TF's and Keras's internals."""
    ns = {}
    exec("from tensorflow.python.data.ops.dataset_ops import Dataset\n"
         "from tensorflow.python.training.optimizer import Optimizer\n"
         "from keras.optimizer_v2 import optimizer_v2\n"
         "from keras.optimizer_v2.gradient_descent import SGD\n"
         "import keras.optimizer_v2.adam as adam\n", ns)
    assert ns["Dataset"] is ipu_gpu.data.Dataset
    assert ns["Optimizer"] is ipu_gpu.compat.v1.train.Optimizer
    assert ns["optimizer_v2"].OptimizerV2 is ipu_gpu.keras.optimizers.optimizer_v2.OptimizerV2
    assert ns["SGD"] is ipu_gpu.keras.optimizers.SGD
    assert ns["adam"].Adam is ipu_gpu.keras.optimizers.Adam
    with pytest.raises(ImportError, match="tensorflow.python.training.saver"):
        exec("from tensorflow.python.training.saver import Saver\n", {})


def test_every_table_entry_with_a_target_imports(hooked):
    for name, alias in aliases.TABLE.items():
        if aliases.alias_for(name) is None:  # a room not built yet: the named error
            with pytest.raises(ImportError, match=f"ipu_gpu does not emulate {name}"):
                _import(name)
            continue
        module = _import(name)
        assert isinstance(module, aliases.AliasModule)
        for attr in alias.names or ():
            getattr(module, attr)  # a whitelisted internal name really exists


def test_missing_symbols_fail_loudly_with_their_tensorflow_name(hooked):
    tf = _import("tensorflow")
    with pytest.raises(AttributeError, match=r"^module 'tensorflow' has no attribute 'Session': "
                       r"ipu_gpu does not emulate tensorflow\.Session"):
        tf.Session  # noqa: B018
    with pytest.raises(AttributeError, match=r"ipu_gpu does not emulate tensorflow\.nn\.nothing"):
        tf.nn.nothing  # noqa: B018
    with pytest.raises(ImportError, match=r"ipu_gpu does not emulate tensorflow\.contrib$|"
                       r"ipu_gpu does not emulate tensorflow\.contrib \("):
        _import("tensorflow.contrib")
    with pytest.raises(ImportError, match=r"ipu_gpu does not emulate "
                       r"tensorflow\.python\.ipu\.no_such_module"):
        exec("from tensorflow.python.ipu import no_such_module", {})
    with pytest.raises(ImportError, match=r"ipu_gpu does not emulate "
                       r"tensorflow\.python\.ipu\.config\.NoSuchThing"):
        exec("from tensorflow.python.ipu.config import NoSuchThing", {})
    ops = _import("tensorflow.python.framework.ops")
    with pytest.raises(AttributeError,
                       match=r"tensorflow\.python\.framework\.ops\.RegisterGradient"):
        ops.RegisterGradient  # noqa: B018 - whitelisted internals expose only what ipu_gpu has


def test_an_ipu_gpu_module_reached_as_an_attribute_keeps_its_alias_name(hooked):
    tf1 = _import("tensorflow.compat.v1")
    # TF1's relu is ipu_gpu's, wrapped to name its graph node (compat/v1/op_names.py)
    assert tf1.nn.relu.__wrapped__ is ipu_gpu.nn.relu
    with pytest.raises(AttributeError, match=r"tensorflow\.compat\.v1\.nn\.dynamic_rnn"):
        tf1.nn.dynamic_rnn  # noqa: B018


def test_tf1_switches_change_what_tensorflow_shows(hooked):
    tf = _import("tensorflow")
    assert tf.__version__ == "2.6.3"
    assert not hasattr(tf, "disable_v2_behavior")  # TF2's root has it under compat.v1 only
    tf.compat.v1.disable_v2_behavior()
    assert tf.__version__ == "1.15.5"
    assert tf.disable_v2_behavior is behavior.disable_v2_behavior
    tf.enable_v2_behavior()
    assert tf.__version__ == "2.6.3"
    assert not hasattr(tf, "disable_v2_behavior")  # names cached for TF1 are dropped
    aliases.install(tf_version=1)  # forcing a version drops them too
    assert tf.disable_v2_behavior is behavior.disable_v2_behavior


def test_install_forcing_a_version(hooked):
    aliases.install(tf_version=1)  # idempotent; forcing wins over the program's switches
    tf = _import("tensorflow")
    behavior.set_tf_version(2)
    assert tf.__version__ == "1.15.5"
    with pytest.raises(ValueError, match="tf_version must be 1, 2 or None"):
        aliases.install(tf_version=3)


def test_install_is_idempotent_and_thread_safe():
    barrier = threading.Barrier(8)

    def go():
        barrier.wait()
        aliases.install()

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert sum(f is aliases._state.finder for f in sys.meta_path) == 1
    finally:
        aliases.uninstall()
    assert aliases._state.finder not in sys.meta_path
    aliases.uninstall()  # twice is fine


def test_real_modules_are_set_aside_and_restored(monkeypatch):
    fake = types.ModuleType("keras")
    monkeypatch.setitem(sys.modules, "keras", fake)
    with aliases.installed():
        assert "keras" not in sys.modules or sys.modules["keras"] is not fake
    assert sys.modules["keras"] is fake
    assert not aliases.is_installed()


def test_nothing_is_aliased_unless_asked():
    assert not aliases.is_installed()
    assert aliases._state.finder not in sys.meta_path
    assert not any(isinstance(m, aliases.AliasModule) for m in sys.modules.values())


def test_resolve_agrees_with_the_hook_without_installing_it():
    assert aliases.resolve("tensorflow.python.ipu.ipu_compiler.compile") == (
        True, ipu_gpu.ipu.ipu_compiler.compile)
    ok, why = aliases.resolve("tensorflow.python.ipu.ipu_compiler.nothing")
    assert not ok and "tensorflow.python.ipu.ipu_compiler.nothing" in why
    ok, why = aliases.resolve("tensorflow.contrib.layers.xavier_initializer")
    assert not ok and "tensorflow.contrib" in why
    ok, why = aliases.resolve("numpy.zeros")
    assert not ok
    assert not aliases.is_installed() and "tensorflow" not in sys.modules or not isinstance(
        sys.modules.get("tensorflow"), aliases.AliasModule)


@pytest.mark.parametrize(("source", "version"), [
    ("import tensorflow as tf\ntf.keras.Sequential()\n", 2),
    ("import tensorflow as tf\nsess = tf.Session()\n", 1),
    ("import tensorflow as tf\nx = tf.placeholder(tf.float32)\n", 1),
    ("import tensorflow as tf\nopt = tf.train.GradientDescentOptimizer(0.1)\n", 1),
    ("import tensorflow as tf\ntf.compat.v1.disable_v2_behavior()\n", 1),
    ("import tensorflow.compat.v1 as tf\ntf.disable_eager_execution()\n", 1),
    ("from tensorflow.python import ipu\ncfg = ipu.config.IPUConfig()\n", 2),
    ("import numpy as np\n", None),
    ("def broken(:\n", None),
    ("import tensorflow as tf\nfrom tensorflow import keras\nkeras.layers.Dense(3)\n", 2),
])
def test_detect_tf_version(source, version):
    assert aliases.detect_tf_version(source) == version


def test_import_ipu_gpu_installs_no_hook():
    import subprocess

    code = ("import sys, ipu_gpu, ipu_gpu.aliases\n"
            "assert not ipu_gpu.aliases.is_installed()\n"
            "try:\n    import tensorflow\nexcept ImportError:\n    pass\n"
            "m = sys.modules.get('tensorflow')\n"
            "print(type(m).__name__ if m is not None else 'absent')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() in ("module", "absent")  # the real TensorFlow, or none


def test_star_imports_bind_the_targets_public_names(hooked):
    ns = {}
    exec("from tensorflow.python.ipu.config import *\n"
         "from tensorflow.python.framework.dtypes import *\n", ns)
    assert ns["IPUConfig"] is ipu_gpu.ipu.config.IPUConfig
    assert ns["float32"] is ipu_gpu.float32 and "Tensor" not in ns  # the whitelist only


def test_tf_newaxis_and_tf_optimizers(hooked):
    tf = _import("tensorflow")
    assert tf.newaxis is None
    assert ipu_gpu.constant([1.0, 2.0])[tf.newaxis].shape == (1, 2)
    from ipu_gpu.keras import optimizers

    assert tf.optimizers.SGD is optimizers.SGD and tf.optimizers.Adam is optimizers.Adam
