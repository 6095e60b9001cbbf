"""``AssumeEqualAcrossReplicas``: marks its inputs as equal on every replica."""

from __future__ import annotations

from ipu_gpu.ipu import cross_replica_ops
from ipu_gpu.keras.engine.base_layer import Layer

__all__ = ["AssumeEqualAcrossReplicas"]


class AssumeEqualAcrossReplicas(Layer):
    """``ipu.cross_replica_ops.assume_equal_across_replicas`` as a layer: the inputs
    unchanged (copied unless ``inplace``), marked as equal across replicas so divergent
    control flow compiles; results are undefined on the IPU when they differ."""

    def __init__(self, inplace=False, **kwargs):
        super().__init__(**kwargs)
        self.inplace = inplace

    def call(self, inputs, **kwargs):
        """The inputs (a tensor or a structure of tensors), marked."""
        return cross_replica_ops.assume_equal_across_replicas(inputs, self.inplace)

    def get_config(self) -> dict:
        return {"inplace": self.inplace}
