"""The IPU-specific API, mirroring ``tensorflow.python.ipu`` (``from tensorflow.python import
ipu``): configuration (``config``, ``utils``, ``scopes``), running programs
(``ipu_compiler``, ``loops``, the feeds, the replication ops) and the op modules
(``nn_ops``, ``math_ops``, ...). Op modules are also reachable as ``ipu.ops.<module>``."""

from . import (all_to_all_op, config, cross_replica_ops, dataset_benchmark, embedding_ops,
               ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, ipu_strategy, loops, math_ops,
               nn_ops, reduce_scatter_op, replication_ops, scopes, slicing_ops, statistics_ops,
               utils, within_replica_ops)
from . import ops  # after the op modules: it registers them under ipu.ops

__all__ = ["all_to_all_op", "config", "cross_replica_ops", "dataset_benchmark", "embedding_ops",
           "ipu_compiler", "ipu_infeed_queue", "ipu_outfeed_queue", "ipu_strategy", "loops",
           "math_ops",
           "nn_ops", "ops", "reduce_scatter_op", "replication_ops", "scopes", "slicing_ops",
           "statistics_ops", "utils", "within_replica_ops"]
