"""``keras.optimizers.legacy``: the same Keras 2 (OptimizerV2) classes under tf-keras's
legacy names."""

from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .nadam import Nadam
from .optimizer_v2 import Optimizer, OptimizerV2
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Adadelta", "Adagrad", "Adam", "Adamax", "Nadam", "Optimizer", "OptimizerV2",
           "RMSprop", "SGD"]
