"""The refusal Graphcore's Keras gives an options dict holding a key it sets itself or
cannot take (``set_pipelining_options``, ``set_infeed_queue_options``, ...)."""

from __future__ import annotations

AUTOMATIC = "This argument is automatically set by Keras."
INCOMPATIBLE = "This argument is not compatible with Keras."


def refuse(kwargs: dict, keys, kwargs_name: str, reason: str) -> None:
    """ValueError naming the first of ``keys`` found in ``kwargs`` (Graphcore's text)."""
    for key in keys:
        if key in kwargs:
            raise ValueError(f"Found `{key}` key in `{kwargs_name}`. {reason}")
