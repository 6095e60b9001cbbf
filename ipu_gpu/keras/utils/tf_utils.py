"""``keras.utils.set_random_seed`` (Keras 2's ``utils/tf_utils.py``): one call seeds every
source of randomness a Keras program draws from."""

from __future__ import annotations

import random

import numpy as np

from ... import random as _random
from .. import backend


def set_random_seed(seed: int) -> None:
    """Seed Python's ``random``, numpy's global generator, ipu_gpu's global seed
    (``tf.random.set_seed``) and the generator unseeded Keras initializers draw their seeds
    from, as tf-keras does, so a program gives the same weights and values on every run.

    Raises:
      ValueError: ``seed`` is not an int (Keras's message).
    """
    if not isinstance(seed, int):
        raise ValueError("Expected `seed` argument to be an integer. "
                         f"Received: seed={seed} (of type {type(seed)})")
    random.seed(seed)
    np.random.seed(seed)
    _random.set_seed(seed)
    backend._SEED_GENERATOR.generator = random.Random(seed)


def get_random_seed() -> int:
    """A seed for a random generator: drawn from ``set_random_seed``'s generator when one is
    set, else from Python's ``random`` (tf-keras's rule)."""
    generator = backend._SEED_GENERATOR.generator
    if generator is not None:
        return generator.randint(1, int(1e9))
    return random.randint(1, int(1e9))
