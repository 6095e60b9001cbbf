"""popdist: one emulated instance, or what poprun's environment says."""

import pytest

import ipu_gpu.popdist as popdist
from ipu_gpu import ipu


def test_single_instance_defaults(monkeypatch):
    for name in ("POPDIST_NUM_INSTANCES", "POPDIST_INSTANCE_INDEX",
                 "POPDIST_NUM_LOCAL_REPLICAS", "POPDIST_NUM_IPUS_PER_REPLICA"):
        monkeypatch.delenv(name, raising=False)
    assert not popdist.isPopdistEnvSet()
    popdist.init()
    assert (popdist.getInstanceIndex(), popdist.getNumInstances()) == (0, 1)
    assert popdist.getNumLocalReplicas() == 1
    assert popdist.getNumTotalReplicas() == 1
    assert popdist.getReplicaIndexOffset() == 0


def test_poprun_environment(monkeypatch):
    monkeypatch.setenv("POPDIST_NUM_INSTANCES", "2")
    monkeypatch.setenv("POPDIST_INSTANCE_INDEX", "1")
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "4")
    monkeypatch.setenv("POPDIST_NUM_IPUS_PER_REPLICA", "2")
    assert popdist.isPopdistEnvSet()
    assert popdist.getNumTotalReplicas() == 8
    assert popdist.getReplicaIndexOffset() == 4
    assert popdist.getNumIpusPerReplica() == 2


def test_tensorflow_set_ipu_config(monkeypatch):
    from ipu_gpu.popdist import tensorflow as popdist_tf
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "2")
    config = ipu.config.IPUConfig()
    assert popdist_tf.set_ipu_config(config, ipus_per_replica=2) is config
    assert config.auto_select_ipus == 4
    untouched = ipu.config.IPUConfig()
    popdist_tf.set_ipu_config(untouched, 2, configure_device=False)
    assert untouched.auto_select_ipus != 4


def test_poptorch_options(monkeypatch):
    pytest.importorskip("torch")
    from ipu_gpu.popdist import poptorch as popdist_poptorch
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "2")
    opts = popdist_poptorch.Options()
    assert opts.replication_factor == 2
    opts.deviceIterations(4)
    assert opts.device_iterations == 4
