"""``ipu_tensorflow_addons.keras.layers``: Keras layers made for the IPU."""

from .assume_equal_across_replicas import AssumeEqualAcrossReplicas
from .ctc import CTCInferenceLayer, CTCLoss, CTCPredictionsLayer
from .dense import SerialDense
from .dropout import Dropout
from .embedding_lookup import Embedding
from .normalization import (GroupNorm, GroupNormalization, InstanceNorm, InstanceNormalization,
                            LayerNorm, LayerNormalization)
from .recomputation import RecomputationCheckpoint
from .rnn import GRU, LSTM, PopnnGRU, PopnnLSTM

__all__ = ["AssumeEqualAcrossReplicas", "CTCInferenceLayer", "CTCLoss", "CTCPredictionsLayer",
           "Dropout", "Embedding", "GRU", "GroupNorm", "GroupNormalization", "InstanceNorm",
           "InstanceNormalization", "LSTM", "LayerNorm", "LayerNormalization", "PopnnGRU",
           "PopnnLSTM", "RecomputationCheckpoint", "SerialDense"]
