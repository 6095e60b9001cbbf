"""``tensorflow.python.ipu.horovod.ipu_multi_replica_strategy``: the SDK 2.0 name of the TF 1
``PopDistStrategy`` (``popdist_strategy``)."""

from .popdist_strategy import PopDistStrategy

IPUMultiReplicaStrategy = PopDistStrategy
IPUMultiReplicaStrategyV1 = PopDistStrategy

__all__ = ["IPUMultiReplicaStrategy", "IPUMultiReplicaStrategyV1"]
