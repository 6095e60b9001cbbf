"""``tf.sparse``: what programs that parse ``VarLenFeature`` records need (``to_dense``)."""

from .io.sparse import SparseTensor, to_dense

__all__ = ["SparseTensor", "to_dense"]
