"""``keras.optimizer_v2``: Keras 2.6's module layout for its optimizers (``optimizer_v2``,
``adam``, ``gradient_descent``, ...), which programs import from directly. Each module is the
one ``keras.optimizers`` is built from."""

import sys

from ..optimizers import (adadelta, adagrad, adam, adamax, nadam, optimizer_v2, rmsprop,
                          schedules, sgd)

gradient_descent = sgd
learning_rate_schedule = schedules

__all__ = ["adadelta", "adagrad", "adam", "adamax", "gradient_descent",
           "learning_rate_schedule", "nadam", "optimizer_v2", "rmsprop"]

for _name in __all__:
    sys.modules[f"{__name__}.{_name}"] = globals()[_name]
