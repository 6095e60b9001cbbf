"""``keras.layers``: the Keras 2 layers, each a composition of ipu_gpu ops (gradients come
from the tape), plus ``Layer``, ``InputSpec``, ``Input`` and ``InputLayer`` from the engine."""

from ..engine.base_layer import Layer
from ..engine.input_layer import Input, InputLayer
from ..engine.input_spec import InputSpec
from ..engine.op_lambda import TFOpLambda
from .activation import ELU, LeakyReLU, PReLU, ReLU, Softmax
from .attention import EinsumDense, MultiHeadAttention
from .convolutional import (Conv1D, Conv2D, Conv2DTranspose, Convolution1D, Convolution2D,
                            Convolution2DTranspose, DepthwiseConv2D, SeparableConv2D,
                            SeparableConvolution2D)
from .conv1d_separable import DepthwiseConv1D, SeparableConv1D, SeparableConvolution1D
from .conv1d_transpose import Conv1DTranspose, Convolution1DTranspose
from .convolutional3d import Conv3D, Conv3DTranspose, Convolution3D, Convolution3DTranspose
from .core import Activation, Dense, Identity, Lambda, Masking, Rescaling
from .embedding import Embedding
from .merging import (Add, Average, Concatenate, Dot, Maximum, Minimum, Multiply, Subtract, add,
                      average, concatenate, dot, maximum, minimum, multiply, subtract)
from .normalization import BatchNormalization, LayerNormalization
from .pooling import (AveragePooling1D, AveragePooling2D, AvgPool1D, AvgPool2D,
                      GlobalAveragePooling1D, GlobalAveragePooling2D, GlobalAvgPool1D,
                      GlobalAvgPool2D, GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPooling1D,
                      GlobalMaxPooling2D, MaxPool1D, MaxPool2D, MaxPooling1D, MaxPooling2D)
from .pooling3d import (AveragePooling3D, AvgPool3D, GlobalAveragePooling3D, GlobalAvgPool3D,
                        GlobalMaxPool3D, GlobalMaxPooling3D, MaxPool3D, MaxPooling3D)
from .regularization import (ActivityRegularization, Dropout, GaussianDropout, GaussianNoise,
                             SpatialDropout2D)
from .rnn import (GRU, LSTM, RNN, Bidirectional, GRUCell, LSTMCell, SimpleRNN, SimpleRNNCell,
                  StackedRNNCells, TimeDistributed)
from .reshaping import (Cropping1D, Cropping2D, Flatten, Permute, RepeatVector, Reshape,
                        UpSampling1D, UpSampling2D, ZeroPadding1D, ZeroPadding2D)
from .reshaping3d import Cropping3D, UpSampling3D, ZeroPadding3D
from .dense_attention import AdditiveAttention, Attention
from .group_normalization import GroupNormalization
from .spatial_dropout import SpatialDropout1D, SpatialDropout3D
from .unit_activation import ThresholdedReLU, UnitNormalization
from . import experimental
from .experimental.sync_batch_normalization import SyncBatchNormalization  # noqa: F401
from .preprocessing import (CategoryEncoding, CenterCrop, Discretization, Hashing,
                            IntegerLookup, Normalization, RandomBrightness, RandomContrast,
                            RandomCrop, RandomFlip, RandomHeight, RandomRotation,
                            RandomTranslation, RandomWidth, RandomZoom, Resizing, StringLookup,
                            TextVectorization)
from .alpha_dropout import AlphaDropout
from .locally_connected import LocallyConnected1D, LocallyConnected2D
from .conv_lstm import ConvLSTM1D, ConvLSTM2D, ConvLSTM3D
from .spectral_normalization import SpectralNormalization

__all__ = [
    "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "SimpleRNN", "SimpleRNNCell", "StackedRNNCells",
    "Bidirectional",
    "TimeDistributed", "deserialize", "serialize", "EinsumDense", "MultiHeadAttention",
    "ActivityRegularization", "GaussianDropout", "Identity", "Masking", "PReLU", "Rescaling",
    "Activation", "Add", "Average", "AveragePooling1D", "AveragePooling2D", "AvgPool1D",
    "AvgPool2D", "BatchNormalization", "Concatenate", "Conv1D", "Conv2D", "Conv2DTranspose",
    "Convolution1D", "Convolution2D", "Convolution2DTranspose", "Cropping1D", "Cropping2D",
    "Dense", "DepthwiseConv2D", "Dot", "Dropout", "ELU", "Embedding", "Flatten",
    "GaussianNoise", "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAvgPool1D",
    "GlobalAvgPool2D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPooling1D",
    "GlobalMaxPooling2D", "Input", "InputLayer", "InputSpec", "Lambda", "Layer",
    "LayerNormalization", "LeakyReLU", "MaxPool1D", "MaxPool2D", "MaxPooling1D", "MaxPooling2D",
    "Maximum", "Minimum", "Multiply", "Permute", "ReLU", "RepeatVector", "Reshape",
    "SeparableConv2D", "SeparableConvolution2D", "Softmax", "SpatialDropout2D", "Subtract",
    "TFOpLambda", "UpSampling1D", "UpSampling2D", "ZeroPadding1D", "ZeroPadding2D", "add",
    "average", "concatenate", "dot", "maximum", "minimum", "multiply", "subtract",
]
__all__ += ["AveragePooling3D", "AvgPool3D", "Conv3D", "Conv3DTranspose", "Convolution3D",
            "Convolution3DTranspose", "Cropping3D", "GlobalAveragePooling3D", "GlobalAvgPool3D",
            "GlobalMaxPool3D", "GlobalMaxPooling3D", "MaxPool3D", "MaxPooling3D", "UpSampling3D",
            "ZeroPadding3D", "SpatialDropout1D", "SpatialDropout3D", "ThresholdedReLU",
            "UnitNormalization", "AdditiveAttention", "Attention", "Conv1DTranspose",
            "Convolution1DTranspose", "DepthwiseConv1D", "SeparableConv1D",
            "SeparableConvolution1D", "GroupNormalization"]  # issue 16
__all__ += ["CategoryEncoding", "CenterCrop", "Discretization", "Hashing", "IntegerLookup",
            "Normalization", "RandomBrightness", "RandomContrast", "RandomCrop", "RandomFlip",
            "RandomHeight", "RandomRotation", "RandomTranslation", "RandomWidth", "RandomZoom",
            "Resizing", "experimental"]  # issue 16: preprocessing layers
__all__ += ["StringLookup", "TextVectorization"]  # issue 17: string preprocessing
__all__ += ["AlphaDropout", "LocallyConnected1D", "LocallyConnected2D", "ConvLSTM1D",
            "ConvLSTM2D", "ConvLSTM3D", "SpectralNormalization"]  # issue 16


def serialize(layer) -> dict:
    """A layer's config dict with its class name (``tf.keras.layers.serialize``)."""
    from ..engine.serialization import get_registered_name

    return {"module": "keras.layers", "class_name": get_registered_name(type(layer)),
            "config": layer.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """The layer a ``serialize`` dict describes (classes of this module, or
    ``custom_objects``).

    Raises:
      ValueError: an unknown class name.
    """
    from ..engine.serialization import deserialize_keras_object

    objects = {name: obj for name, obj in globals().items()
               if isinstance(obj, type) and issubclass(obj, Layer)}
    return deserialize_keras_object(config, objects, custom_objects, "layer")
