"""``tensorflow.python.ipu.embedding_ops`` (also ``ipu.ops.embedding_ops``): the embedding
lookup (``ipu_gpu.ops.embedding``) and host embeddings (``ipu_gpu.emulation.host_embedding``,
in TF1 graphs ``host_embedding_graph``), re-exported."""

from ipu_gpu.emulation.host_embedding import (HostEmbeddingOptimizerSpec,
                                              HostEmbeddingSGDGAOptimizerSpec)
from ipu_gpu.ipu.host_embedding_graph import (HostEmbedding, HostEmbeddingScope,
                                              create_host_embedding)
from ipu_gpu.ops.embedding import embedding_lookup

__all__ = ["HostEmbedding", "HostEmbeddingOptimizerSpec", "HostEmbeddingSGDGAOptimizerSpec",
           "HostEmbeddingScope", "create_host_embedding", "embedding_lookup"]
