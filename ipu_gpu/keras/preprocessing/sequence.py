"""``keras.preprocessing.sequence``: Keras 2's ``pad_sequences`` (also
``keras.utils.pad_sequences``), ``make_sampling_table`` and ``skipgrams`` (word2vec pairs,
drawn from Python's ``random`` as Keras draws them, so a seeded program gets Keras's pairs).
``TimeseriesGenerator`` is not provided."""

from __future__ import annotations

import random

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


def make_sampling_table(size, sampling_factor=1e-5) -> np.ndarray:
    """The probability of keeping the word of each frequency rank, word2vec's
    ``min(1, sqrt(sampling_factor / frequency))`` with a Zipf estimate of the frequency
    (index 0 is taken as rank 1)."""
    gamma = 0.577  # Euler-Mascheroni, in the harmonic-number estimate of the rank's frequency
    rank = np.arange(size)
    rank[0] = 1
    inv_fq = rank * (np.log(rank) + gamma) + 0.5 - 1.0 / (12.0 * rank)
    f = sampling_factor * inv_fq
    return np.minimum(1.0, f / np.sqrt(f))


def skipgrams(sequence, vocabulary_size, window_size=4, negative_samples=1.0, shuffle=True,
              categorical=False, sampling_table=None, seed=None):
    """Skip-gram pairs of a sequence of word indices: ``(couples, labels)``, each couple
    ``[word, context]`` with label 1 (a word within ``window_size``) or 0 (a random word in
    ``[1, vocabulary_size)``, ``negative_samples`` of them per positive pair). Index 0 is
    skipped; ``sampling_table[w]`` is the chance of keeping word ``w``; ``categorical``
    labels are ``[0, 1]``/``[1, 0]``; ``shuffle`` shuffles both lists alike (``seed``)."""
    couples = []
    labels = []
    for i, wi in enumerate(sequence):
        if not wi:
            continue
        if sampling_table is not None and sampling_table[wi] < random.random():
            continue
        window_start = max(0, i - window_size)
        window_end = min(len(sequence), i + window_size + 1)
        for j in range(window_start, window_end):
            if j != i:
                wj = sequence[j]
                if not wj:
                    continue
                couples.append([wi, wj])
                labels.append([0, 1] if categorical else 1)
    if negative_samples > 0:
        num_negative_samples = int(len(labels) * negative_samples)
        words = [c[0] for c in couples]
        random.shuffle(words)
        couples += [[words[i % len(words)], random.randint(1, int(vocabulary_size - 1))]
                    for i in range(num_negative_samples)]
        labels += [[1, 0] if categorical else 0] * num_negative_samples
    if shuffle:
        if seed is None:
            seed = random.randint(0, int(10e6))
        random.seed(seed)
        random.shuffle(couples)
        random.seed(seed)
        random.shuffle(labels)
    return couples, labels


__all__ = ["make_sampling_table", "pad_sequences", "skipgrams"]
