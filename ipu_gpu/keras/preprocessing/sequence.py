"""``keras.preprocessing.sequence.pad_sequences`` (also ``keras.utils.pad_sequences``):
Keras 2's padding of variable-length sequences into one numpy array."""

from __future__ import annotations

import numpy as np


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0) -> np.ndarray:
    """Pad (or truncate) each sequence to a common length: an array of shape
    ``(len(sequences), maxlen) + sample_shape``.

    Args:
      sequences: a list of sequences (lists or arrays; each element may itself be an array,
        whose shape all elements must share).
      maxlen: the length to pad/truncate to (default: the longest sequence's).
      dtype: the output dtype (``object`` for variable-length strings).
      padding: ``"pre"`` or ``"post"``: pad before or after each sequence.
      truncating: ``"pre"`` or ``"post"``: drop values from the start or the end of longer
        sequences.
      value: the padding value.

    Raises:
      ValueError: ``sequences`` not iterable, or holding a non-iterable; a string ``value``
        with a non-string dtype; an unknown ``padding``/``truncating``; a sequence whose
        elements have another shape than the first non-empty sequence's (Keras's messages).
    """
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable.")
    num_samples = len(sequences)
    lengths = []
    sample_shape = ()
    found = False
    for x in sequences:  # the sample shape is the first non-empty sequence's
        try:
            lengths.append(len(x))
            if not found and len(x):
                sample_shape = np.asarray(x).shape[1:]
                found = True
        except TypeError as e:
            raise ValueError("`sequences` must be a list of iterables. "
                             f"Found non-iterable: {str(x)}") from e
    if maxlen is None:
        maxlen = np.max(lengths)
    is_dtype_str = np.issubdtype(dtype, np.str_)
    if isinstance(value, str) and dtype is not object and not is_dtype_str:
        raise ValueError(f"`dtype` {dtype} is not compatible with `value`'s type: "
                         f"{type(value)}\nYou should set `dtype=object` for variable length "
                         "strings.")
    x = np.full((num_samples, maxlen) + sample_shape, value, dtype=dtype)
    for idx, s in enumerate(sequences):
        if not len(s):
            continue
        if truncating == "pre":
            trunc = s[-maxlen:]
        elif truncating == "post":
            trunc = s[:maxlen]
        else:
            raise ValueError(f'Truncating type "{truncating}" not understood')
        trunc = np.asarray(trunc, dtype=dtype)
        if trunc.shape[1:] != sample_shape:
            raise ValueError(f"Shape of sample {trunc.shape[1:]} of sequence at position {idx} "
                             f"is different from expected shape {sample_shape}")
        if padding == "post":
            x[idx, :len(trunc)] = trunc
        elif padding == "pre":
            x[idx, -len(trunc):] = trunc
        else:
            raise ValueError(f'Padding type "{padding}" not understood')
    return x


__all__ = ["pad_sequences"]
