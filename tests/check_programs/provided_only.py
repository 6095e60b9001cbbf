# A TF2 program that uses only what ipu_gpu provides: `ipu-gpu check` exits 0.
import tensorflow as tf
from tensorflow.python import ipu
from tensorflow.python.ipu import ipu_compiler, loops

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()


def body(x):
    return tf.nn.relu(x) * 2.0


def my_net(x):
    return loops.repeat(3, body, [x])


with ipu.scopes.ipu_scope("/device:IPU:0"):
    result = ipu_compiler.compile(my_net, inputs=[tf.constant([1.0, -2.0])])
print(result)
