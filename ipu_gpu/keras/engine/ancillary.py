"""The layers ``add_loss`` and ``add_metric`` insert into a functional model given symbolic
tensors (Keras 2's ``base_layer.AddLoss`` / ``AddMetric``): each passes its input through and,
called on every run of the model, adds it as a loss or updates the metric with it."""

from __future__ import annotations

from .base_layer import Layer, _mean_metric

__all__ = ["AddLoss", "AddMetric"]


class AddLoss(Layer):
    """Adds its input to the model's losses on each call.

    Args:
      unconditional: whether the loss is independent of the inputs (Keras's flag; the loss
        is added on each call either way).
    """

    def __init__(self, unconditional=False, **kwargs):
        kwargs["autocast"] = False  # a loss keeps its dtype
        super().__init__(**kwargs)
        self.unconditional = unconditional

    def call(self, inputs):
        self.add_loss(inputs, inputs=not self.unconditional)
        return inputs

    def get_config(self) -> dict:
        return {**super().get_config(), "unconditional": self.unconditional}


class AddMetric(Layer):
    """Updates the metric ``metric_name`` (a mean) with its input on each call; the metric
    exists from construction, so ``model.metrics`` lists it before the first call.

    Args:
      aggregation: Keras's aggregation (``"mean"``).
      metric_name: the metric's name.
    """

    def __init__(self, aggregation=None, metric_name=None, **kwargs):
        super().__init__(**kwargs)
        self.aggregation = aggregation
        self.metric_name = metric_name
        self._metrics.append(_mean_metric(metric_name, self.dtype))

    def call(self, inputs):
        self.add_metric(inputs, aggregation=self.aggregation, name=self.metric_name)
        return inputs

    def get_config(self) -> dict:
        return {**super().get_config(), "aggregation": self.aggregation,
                "metric_name": self.metric_name}
