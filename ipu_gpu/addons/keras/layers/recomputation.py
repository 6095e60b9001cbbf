"""``RecomputationCheckpoint``: marks values of a pipeline stage not to be recomputed."""

from __future__ import annotations

from ipu_gpu.ipu import pipelining_ops
from ipu_gpu.keras.engine.base_layer import Layer

__all__ = ["RecomputationCheckpoint"]


class RecomputationCheckpoint(Layer):
    """Checkpoints its inputs (a tensor or a structure of tensors) for the
    ``RecomputeAndBackpropagateInterleaved`` recomputation mode; the values pass through
    unchanged (the emulator keeps every activation, so nothing is recomputed)."""

    def call(self, inputs, **kwargs):
        """The checkpointed inputs (same structure, shapes and dtypes)."""
        return pipelining_ops.recomputation_checkpoint(inputs, name=self.name)

    def get_config(self) -> dict:
        return {}
