"""``keras.datasets``: Keras's datasets read from the Keras cache, never downloaded.

Each ``load_data`` returns what Keras's returns from the same files (``$KERAS_HOME/datasets``
if KERAS_HOME is set, else ``~/.keras/datasets``); a missing file raises
``utils.data_utils.CacheMissError`` naming the URL to fetch and the path to save it at.
"""

from . import boston_housing, cifar10, cifar100, fashion_mnist, imdb, mnist

__all__ = ["boston_housing", "cifar10", "cifar100", "fashion_mnist", "imdb", "mnist"]
