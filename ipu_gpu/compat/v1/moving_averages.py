"""``tf.compat.v1.train.ExponentialMovingAverage`` on graph variables (TF 1.15's
``moving_averages.py``): a shadow variable per averaged variable, ``<var>/<name>``, starting
at the variable's initial value, a global variable, not trainable (the averaged variable
joins MOVING_AVERAGE_VARIABLES); ``apply`` returns one operation updating every shadow by
``shadow -= (1 - decay) * (shadow - var)``, the decay being ``min(decay, (1 + n) / (10 +
n))`` when ``num_updates`` (``n``) is given. ``zero_debias`` is not emulated (TF applies it
only to non-variable tensors)."""

from __future__ import annotations

__all__ = ["ExponentialMovingAverage"]

MOVING_AVERAGE_VARIABLES = "moving_average_variables"


class ExponentialMovingAverage:
    """Maintains moving averages of variables with exponential decay."""

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        self._decay, self._num_updates = decay, num_updates
        self._zero_debias, self._name = zero_debias, name
        self._averages: dict = {}

    @property
    def name(self) -> str:
        return self._name

    def _key(self, var):
        return id(var)

    def average_name(self, var) -> str:
        """The name of ``var``'s shadow variable (``<var's op name>/<name>``)."""
        return f"{var.op.name}/{self._name}"

    def average(self, var):
        """The shadow variable of ``var``, or None when ``apply`` has not made one."""
        return self._averages.get(self._key(var))

    def apply(self, var_list=None):
        """Makes the shadow variables of ``var_list`` (default: the trainable variables) and
        returns the operation updating them.

        Raises:
          TypeError: a variable is not a float variable (TF's message).
          ValueError: a variable was already averaged by this object (TF's message)."""
        import ipu_gpu as core

        from ... import graph
        from .variable_scope import _absolute_names

        if var_list is None:
            var_list = graph.trainable_variables()
        var_list = list(var_list)
        for var in var_list:
            if var.dtype.name not in ("float16", "float32", "float64", "bfloat16"):
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
            if self._key(var) in self._averages:
                raise ValueError(f"Moving average already computed for: {var.name}")
        g = graph.get_default_graph()
        updates = []
        decay = self._decay_value(core)
        for var in var_list:
            init = var.initialized_value() if hasattr(var, "initialized_value") else var
            with _absolute_names():
                shadow = graph.make_variable(init, trainable=False,
                                             name=self.average_name(var),
                                             collections=["variables"])
            g.add_to_collection(MOVING_AVERAGE_VARIABLES, var)  # the averaged one, as TF
            self._averages[self._key(var)] = shadow
            updates.append(graph.core.add_node(
                g, "AssignMovingAvg", f"{shadow.op.name}/AssignMovingAvg",
                [shadow, var, decay], _update, []))
        return graph.group(*updates, name=self._name)

    def _decay_value(self, core):
        decay = core.constant(float(self._decay), core.float32)
        if self._num_updates is None:
            return decay
        n = core.cast(self._num_updates, core.float32)
        return core.minimum(decay, (1.0 + n) / (10.0 + n))

    def variables_to_restore(self, moving_avg_variables=None) -> dict:
        """{checkpoint name: variable} restoring each averaged variable (default: the
        trainable and moving-average variables) from its shadow's name and every other
        global variable from its own (TF's map, for ``Saver(var_list=...)``)."""
        from ... import graph

        if moving_avg_variables is None:
            moving_avg_variables = [*graph.trainable_variables(),
                                    *graph.get_default_graph().get_collection(
                                        MOVING_AVERAGE_VARIABLES)]
        averaged = list({id(v): v for v in moving_avg_variables}.values())
        names = {self.average_name(v): v for v in averaged}
        ids = {id(v) for v in averaged}
        for v in graph.global_variables():
            if id(v) not in ids and v.op.name not in names:
                names[v.op.name] = v
        return names


def _update(shadow, var, decay):
    """``shadow -= (1 - decay) * (shadow - var)`` (TF's ``assign_moving_average``)."""
    import ipu_gpu as core

    d = core.cast(decay, shadow.dtype)
    shadow.assign_sub((1.0 - d) * (shadow.read_value() - var.read_value()))
    return []
