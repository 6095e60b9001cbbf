"""``ipu_gpu.nn``: the ``tf.nn`` functions IPU programs use."""

from .ops.conv import conv1d, conv2d, conv2d_transpose, depthwise_conv2d
from .ops.math import sigmoid, tanh
from .ops.nn import (bias_add, elu, l2_loss, leaky_relu, log_softmax, relu,
                     sigmoid_cross_entropy_with_logits, softmax,
                     softmax_cross_entropy_with_logits, sparse_softmax_cross_entropy_with_logits)
from .ops.pooling import avg_pool2d, max_pool2d
from .ops.random import dropout

__all__ = ["avg_pool2d", "bias_add", "conv1d", "conv2d", "conv2d_transpose", "depthwise_conv2d",
           "dropout",
           "elu", "l2_loss", "leaky_relu", "log_softmax", "max_pool2d", "relu", "sigmoid",
           "sigmoid_cross_entropy_with_logits", "softmax", "softmax_cross_entropy_with_logits",
           "sparse_softmax_cross_entropy_with_logits", "tanh"]
