"""``ipu.gradient_accumulation``: ``GradientAccumulationReductionMethod``, how gradients are
combined over the steps of one weight update (Graphcore's
``tensorflow/python/ipu/gradient_accumulation.py``; also ``ipu.optimizers``'s)."""

from __future__ import annotations

import enum

__all__ = ["GradientAccumulationReductionMethod"]


class GradientAccumulationReductionMethod(enum.Enum):
    """How gradients are accumulated over the steps of one weight update: SUM,
    MEAN (each gradient scaled by 1/N) or RUNNING_MEAN (``acc*n/(n+1) + grad/(n+1)`` at the
    n-th step)."""

    SUM = 0
    MEAN = 1
    RUNNING_MEAN = 2

    @classmethod
    def parse(cls, reduction_method):
        """The member for a member (of this or Graphcore's enum) or a name in any case.

        Raises:
          ValueError: anything else (Graphcore's message).
        """
        if isinstance(reduction_method, cls):
            return reduction_method
        key = getattr(reduction_method, "name", reduction_method)
        if isinstance(key, str) and key.upper() in cls.__members__:
            return cls[key.upper()]
        raise ValueError(f"Cannot parse {reduction_method} as one of "
                         "GradientAccumulationReductionMethod. Valid values are: "
                         f"{', '.join(cls._member_names_)}.")

