"""``tensorflow.python.ipu.distributed.ipu_horovod_strategy``: ``IPUHorovodStrategy``
(``ipu.horovod.ipu_horovod_strategy``)."""

from ..horovod.ipu_horovod_strategy import IPUHorovodStrategy

__all__ = ["IPUHorovodStrategy"]
