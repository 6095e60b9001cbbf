"""``ipu_tensorflow_addons.keras.optimizers``: Keras optimizers made for the IPU."""

from .adam_optimizer import AdamIpuOptimizer
from .ipu_optimizer_base import IpuOptimizerBase
from .lamb_optimizer import LAMBIpuOptimizer
from .sgd_optimizer import SGDIpuOptimizer

__all__ = ["AdamIpuOptimizer", "IpuOptimizerBase", "LAMBIpuOptimizer", "SGDIpuOptimizer"]
