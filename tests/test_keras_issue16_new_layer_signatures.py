"""The signatures and default configs of the layers added for issue 16 (AlphaDropout,
LocallyConnected1D/2D, ConvLSTM1D/2D/3D, SpectralNormalization) against tf-keras's: every
argument with tf-keras's name, default and order."""

from __future__ import annotations

import pytest
from test_keras_audit_surface import config_differences, signature_differences

from ipu_gpu.keras import layers as L

NAMES = ["AlphaDropout", "LocallyConnected1D", "LocallyConnected2D", "ConvLSTM1D",
         "ConvLSTM2D", "ConvLSTM3D", "SpectralNormalization"]
ARGS = {"AlphaDropout": (0.2,), "LocallyConnected1D": (2, 3), "LocallyConnected2D": (2, 3),
        "ConvLSTM1D": (2, 3), "ConvLSTM2D": (2, 3), "ConvLSTM3D": (2, 3)}


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


@pytest.mark.parametrize("name", NAMES)
def test_signature_matches_tf_keras(tfk, name):
    # ConvLSTM's tf-keras constructor takes unroll and time_major through **kwargs, as ours
    assert signature_differences(getattr(L, name), getattr(tfk.layers, name)) == set()


@pytest.mark.parametrize("name", [n for n in NAMES if n in ARGS])
def test_default_config_matches_tf_keras(tfk, name):
    mine = getattr(L, name)(*ARGS[name], name="x")
    theirs = getattr(tfk.layers, name)(*ARGS[name], name="x")
    assert config_differences(mine.get_config(), theirs.get_config()) == set()
