"""``keras.layers.experimental.preprocessing``: the preprocessing layers under their Keras
2.6 names (the same classes as ``keras.layers``)."""

from ..preprocessing import (CategoryEncoding, CenterCrop, Discretization, Hashing,
                             IntegerLookup, Normalization, PreprocessingLayer, RandomContrast,
                             RandomCrop, RandomFlip, RandomHeight, RandomRotation,
                             RandomTranslation, RandomWidth, RandomZoom, Rescaling, Resizing,
                             StringLookup, TextVectorization)

__all__ = ["CategoryEncoding", "CenterCrop", "Discretization", "Hashing", "IntegerLookup",
           "Normalization", "PreprocessingLayer", "RandomContrast", "RandomCrop", "RandomFlip",
           "RandomHeight", "RandomRotation", "RandomTranslation", "RandomWidth", "RandomZoom",
           "Rescaling", "Resizing", "StringLookup", "TextVectorization"]
