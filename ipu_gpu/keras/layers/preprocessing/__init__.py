"""Keras's preprocessing layers (tf-keras's ``keras.layers`` and Keras 2.6's
``keras.layers.experimental.preprocessing``): numeric (``Normalization``, ``Rescaling``,
``Discretization``), categorical on integers (``CategoryEncoding``, ``Hashing``,
``IntegerLookup``) and image (resizing, cropping and random augmentation).

String inputs (``tf.string``): ``StringLookup``, ``TextVectorization``, ``Hashing``."""

from ..core import Rescaling
from .base import PreprocessingLayer
from .category_encoding import CategoryEncoding
from .discretization import Discretization
from .hashing import Hashing
from .image_augmentation import (RandomBrightness, RandomContrast, RandomFlip, RandomRotation,
                                 RandomTranslation, RandomZoom)
from .image_resizing import CenterCrop, RandomCrop, RandomHeight, RandomWidth, Resizing
from .integer_lookup import IntegerLookup
from .normalization import Normalization
from .string_lookup import StringLookup
from .text_vectorization import TextVectorization

__all__ = ["CategoryEncoding", "CenterCrop", "Discretization", "Hashing", "IntegerLookup",
           "Normalization", "PreprocessingLayer", "RandomBrightness", "RandomContrast",
           "RandomCrop", "RandomFlip", "RandomHeight", "RandomRotation", "RandomTranslation",
           "RandomWidth", "RandomZoom", "Rescaling", "Resizing", "StringLookup",
           "TextVectorization"]
