"""Keras's home directory and keras.json settings, read the way Keras reads them."""

from __future__ import annotations

import json
import os

_IMAGE_DATA_FORMATS = ("channels_last", "channels_first")
_image_data_format: str | None = None  # set_image_data_format's value, else keras.json's


def keras_home() -> str:
    """``$KERAS_HOME`` if set, else ``~/.keras`` (``/tmp/.keras`` when ``~`` is not writable).

    Keras 3's rule (keras/src/backend/config.py). Keras 2.6 reads keras.json there too, but
    its ``get_file`` always used ``~/.keras``; see ``utils.data_utils``.
    """
    if "KERAS_HOME" in os.environ:
        return os.environ["KERAS_HOME"]
    home = os.path.expanduser("~")
    if not os.access(home, os.W_OK):
        home = "/tmp"
    return os.path.join(home, ".keras")


def image_data_format() -> str:
    """``"channels_last"`` or ``"channels_first"``: the value set, else keras.json's."""
    if _image_data_format is not None:
        return _image_data_format
    path = os.path.join(os.path.expanduser(keras_home()), "keras.json")
    try:
        with open(path) as f:
            config = json.load(f)
    except (OSError, ValueError):  # no file, or not JSON: Keras ignores it too
        return "channels_last"
    if not isinstance(config, dict):
        return "channels_last"
    value = config.get("image_data_format", "channels_last")
    if value not in _IMAGE_DATA_FORMATS:
        raise ValueError(f"keras.json: image_data_format must be one of {_IMAGE_DATA_FORMATS}, "
                         f"got {value!r} (in {path})")
    return value


def set_image_data_format(data_format: str) -> None:
    """Overrides keras.json's ``image_data_format`` for this process."""
    global _image_data_format
    if data_format not in _IMAGE_DATA_FORMATS:
        raise ValueError(f"set_image_data_format: data_format must be one of "
                         f"{_IMAGE_DATA_FORMATS}, got {data_format!r}")
    _image_data_format = data_format
