"""``SpatialDropout1D`` and ``SpatialDropout3D``: dropout of whole feature maps, one draw per
(sample, channel), as ``SpatialDropout2D`` for sequences and volumes."""

from __future__ import annotations

from ..engine.input_spec import InputSpec
from . import conv_utils
from .regularization import Dropout

__all__ = ["SpatialDropout1D", "SpatialDropout3D"]


class SpatialDropout1D(Dropout):
    """Dropout of whole channels of ``(samples, timesteps, channels)``."""

    def __init__(self, rate, **kwargs):
        kwargs.pop("noise_shape", None)  # set by the layer itself (get_config lists it)
        super().__init__(rate, **kwargs)
        self.input_spec = InputSpec(ndim=3)

    def _get_noise_shape(self, inputs):
        return [inputs.shape[0], 1, inputs.shape[2]]


class SpatialDropout3D(Dropout):
    """Dropout of whole feature volumes of a 5-D input (``data_format`` as Conv3D; as
    tf-keras's, its config leaves ``data_format`` out)."""

    def __init__(self, rate, data_format=None, **kwargs):
        kwargs.pop("noise_shape", None)
        super().__init__(rate, **kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=5)

    def _get_noise_shape(self, inputs):
        shape = inputs.shape
        if self.data_format == "channels_first":
            return [shape[0], shape[1], 1, 1, 1]
        return [shape[0], 1, 1, 1, shape[4]]
