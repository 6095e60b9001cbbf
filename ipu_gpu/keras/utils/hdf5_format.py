"""Model weights in Keras 2's HDF5 layout (``save_weights('w.h5')``), read and written with
h5py, so files move both ways between ipu_gpu and Keras 2.

The file's root has the attributes ``layer_names`` (``model.layers`` order), ``backend``
("tensorflow") and ``keras_version``; one group per layer (sorted by name) with the attribute
``weight_names`` (``dense/kernel:0``, ...) and one dataset per weight at that path; and a
``top_level_model_weights`` group for weights the model holds itself (TF-Keras 2.13+ writes
it, older Keras ignores it). Loading matches the layers that have weights in order (or by
name with ``by_name=True``) and the weights within a layer in order, as Keras does.
"""

from __future__ import annotations

import logging
import os

import numpy as np

__all__ = ["load_subset", "load_weights", "load_weights_from_group", "save_subset",
           "save_weights", "save_weights_to_group"]

_log = logging.getLogger("ipu_gpu.keras")

_KERAS_VERSION = "2.6.0"  # the Keras of Graphcore's SDK 3.x
_HEADER_LIMIT = 64512  # HDF5's object header limit (bytes), as Keras chunks attributes


def _h5py():
    try:
        import h5py
    except ImportError:
        raise ImportError("`save_weights` requires h5py when saving in hdf5, but h5py is not "
                          "available. Try installing h5py package.") from None
    return h5py


def _save_attributes(group, name, data):
    bad = [x for x in data if len(x) > _HEADER_LIMIT]
    if bad:
        raise RuntimeError(f"The following attributes cannot be saved to HDF5 file because "
                           f"they are larger than {_HEADER_LIMIT} bytes: {bad}")
    array = np.asarray(data)
    chunks = 1
    split = np.array_split(array, chunks)
    while any(x.nbytes > _HEADER_LIMIT for x in split):
        chunks += 1
        split = np.array_split(array, chunks)
    if chunks > 1:
        for i, chunk in enumerate(split):
            group.attrs[f"{name}{i}"] = chunk
    else:
        group.attrs[name] = data


def _load_attributes(group, name) -> list:
    def decode(values):
        return [v.decode("utf8") if hasattr(v, "decode") else str(v) for v in values]

    if name in group.attrs:
        return decode(group.attrs[name])
    data, i = [], 0
    while f"{name}{i}" in group.attrs:
        data.extend(decode(group.attrs[f"{name}{i}"]))
        i += 1
    return data


def _layer_weights(layer) -> list:
    return list(layer.trainable_weights) + list(layer.non_trainable_weights)


def save_subset(group, weights):
    """Write ``weights`` into ``group``: the ``weight_names`` attribute and one dataset each."""
    names = [w.name.encode("utf8") for w in weights]
    _save_attributes(group, "weight_names", names)
    for name, w in zip(names, weights):
        value = np.asarray(w.numpy())  # syncs device
        dataset = group.create_dataset(name, value.shape, dtype=value.dtype)
        if value.shape:
            dataset[:] = value
        else:
            dataset[()] = value


def load_subset(group) -> list:
    """The arrays a ``save_subset`` group holds, in ``weight_names`` order."""
    return [np.asarray(group[name]) for name in _load_attributes(group, "weight_names")]


def _top_level_weights(model) -> list:
    return list(model._trainable_weights) + list(model._non_trainable_weights)


def save_weights(model, filepath, overwrite=True):
    """Write ``model``'s weights to ``filepath`` (see the module docstring)."""
    h5py = _h5py()
    filepath = os.fspath(filepath)
    if not overwrite and os.path.isfile(filepath):
        return
    dirname = os.path.dirname(filepath)
    if dirname and not os.path.exists(dirname):
        os.makedirs(dirname, exist_ok=True)
    with h5py.File(filepath, "w") as f:
        save_weights_to_group(f, model)


def save_weights_to_group(f, model):
    """Write ``model``'s weights into the HDF5 file or group ``f``."""
    _save_attributes(f, "layer_names", [layer.name.encode("utf8") for layer in model.layers])
    f.attrs["backend"] = b"tensorflow"
    f.attrs["keras_version"] = _KERAS_VERSION.encode("utf8")
    for layer in sorted(model.layers, key=lambda x: x.name):
        save_subset(f.create_group(layer.name), _layer_weights(layer))
    save_subset(f.create_group("top_level_model_weights"), _top_level_weights(model))


def _assign(pairs):
    for variable, value in pairs:
        if tuple(variable.shape) != tuple(np.shape(value)):
            raise ValueError(f"Cannot assign value to variable ' {variable.name}': Shape "
                             f"mismatch.The variable shape {tuple(variable.shape)}, and the "
                             f"assigned value shape {tuple(np.shape(value))} are incompatible.")
    for variable, value in pairs:
        variable.assign(np.asarray(value, dtype=variable.dtype))


def load_weights(model, filepath, by_name=False, skip_mismatch=False):
    """Load weights from a Keras 2 HDF5 file into ``model``.

    Raises:
      ValueError: layer or weight count mismatches, shape mismatches (Keras's messages).
    """
    h5py = _h5py()
    with h5py.File(os.fspath(filepath), "r") as f:
        if "layer_names" not in f.attrs and "model_weights" in f:
            f = f["model_weights"]  # a whole-model file: its weights group
        load_weights_from_group(f, model, by_name, skip_mismatch)


def load_weights_from_group(f, model, by_name=False, skip_mismatch=False):
    """Load ``model``'s weights from the HDF5 file or group ``f``."""
    pairs = _pairs_by_name(f, model, skip_mismatch) if by_name else _pairs_in_order(f, model)
    _assign(pairs)
    for layer in model._flatten_layers():
        layer.finalize_state()


def _pairs_in_order(f, model) -> list:
    layers = [layer for layer in model.layers if _layer_weights(layer)]
    names = [name for name in _load_attributes(f, "layer_names")
             if _load_attributes(f[name], "weight_names")]
    if len(names) != len(layers):
        raise ValueError(f"Layer count mismatch when loading weights from file. Model expected "
                         f"{len(layers)} layers, found {len(names)} saved layers.")
    pairs = []
    for k, (name, layer) in enumerate(zip(names, layers)):
        symbolic = _layer_weights(layer)
        values = load_subset(f[name])
        if len(values) != len(symbolic):
            raise ValueError(f"Weight count mismatch for layer #{k} (named {layer.name} in the "
                             f"current model, {name} in the save file). Layer expects "
                             f"{len(symbolic)} weight(s). Received {len(values)} saved "
                             "weight(s)")
        pairs += zip(symbolic, values)
    if "top_level_model_weights" in f:
        symbolic = _top_level_weights(model)
        values = load_subset(f["top_level_model_weights"])
        if len(values) != len(symbolic):
            raise ValueError(f"Weight count mismatch for top-level weights when loading weights "
                             f"from file. Model expects {len(symbolic)} top-level weight(s). "
                             f"Received {len(values)} saved top-level weight(s)")
        pairs += zip(symbolic, values)
    return pairs


def _pairs_by_name(f, model, skip_mismatch) -> list:
    index = {}
    for layer in model.layers:
        index.setdefault(layer.name, []).append(layer)
    pairs = []
    for k, name in enumerate(_load_attributes(f, "layer_names")):
        values = load_subset(f[name])
        for layer in index.get(name, []):
            symbolic = _layer_weights(layer)
            if len(values) != len(symbolic):
                message = (f"Weight count mismatch for layer #{k} (named {layer.name}). Layer "
                           f"expects {len(symbolic)} weight(s). Received {len(values)} saved "
                           "weight(s)")
                if skip_mismatch:
                    _log.warning("Skipping loading of weights for layer #%d (named %s) due to "
                                 "mismatch in number of weights.", k, layer.name)
                    continue
                raise ValueError(message)
            for w, v in zip(symbolic, values):
                if tuple(w.shape) != tuple(v.shape):
                    if skip_mismatch:
                        _log.warning("Skipping loading weights for layer #%d (named %s) due to "
                                     "mismatch in shape for weight %s.", k, layer.name, w.name)
                        continue
                    raise ValueError(f"Shape mismatch in layer #{k} (named {layer.name}) for "
                                     f"weight {w.name}. Weight expects shape {tuple(w.shape)}. "
                                     f"Received saved weight with shape {v.shape}")
                pairs.append((w, v))
    if "top_level_model_weights" in f:
        symbolic = _top_level_weights(model)
        values = load_subset(f["top_level_model_weights"])
        if len(values) == len(symbolic):
            pairs += [(w, v) for w, v in zip(symbolic, values) if tuple(w.shape) == v.shape]
        elif not skip_mismatch:
            raise ValueError(f"Weight count mismatch for top-level weights of model. Model "
                             f"expects {len(symbolic)} top-level weight(s). Received "
                             f"{len(values)} saved top-level weight(s)")
    return pairs
