# Name binding cases `ipu-gpu check` follows (not a program to run).
import tensorflow as tf
from tensorflow.python.ipu.config import *  # noqa: F403

try:
    from tensorflow.python.ipu import scopes
except ImportError:
    from tensorflow.python.ipu import not_a_scopes_module as scopes  # a fallback, never used

nn = tf.nn  # `name = <chain>` follows the chain
relu = nn.relu


def f(tf, x):  # a parameter shadows the import: tf.anything here is not a symbol
    return tf.anything(x)


def g(x):
    import tensorflow.compat.v1 as tf  # a local import shadows the module's
    return tf.constant(x)


class Model:
    nn = None  # a class attribute is invisible to methods

    def call(self, x):
        return nn.softmax(relu(x))


config = IPUConfig()  # noqa: F405 - from the star import
values = [tf.math.square(v) for v in (1.0, 2.0)]
with scopes.ipu_scope("/device:IPU:0"):
    pass
