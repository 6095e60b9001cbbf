"""``tf.compat.v1.train.ExponentialMovingAverage`` on graph variables (TF 1.15's
``moving_averages.py``): a shadow variable per averaged variable, ``<var>/<name>``, starting
at the variable's initial value, a global variable, not trainable (the averaged variable
joins MOVING_AVERAGE_VARIABLES); ``apply`` returns one operation updating every shadow by
``shadow -= (1 - decay) * (shadow - var)``, the decay being ``min(decay, (1 + n) / (10 +
n))`` when ``num_updates`` (``n``) is given. ``zero_debias`` is not emulated (TF applies it
only to non-variable tensors).

The same class is TF 2's ``tf.train.ExponentialMovingAverage``: applied eagerly (outside a
graph being built), ``apply`` makes the shadows it lacks (``<var name>/<name>``, starting at
the variable's value), updates every shadow at once and returns None; it may be called again
with the same variables (each call is one update step), and takes only variables (TF 2's
TypeError for tensors)."""

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
        self._averaged: dict = {}  # eager: id -> the averaged variable, in apply order

    @property
    def name(self) -> str:
        return self._name

    def _key(self, var):
        return id(var)

    def average_name(self, var) -> str:
        """The name of ``var``'s shadow variable (``<var's op name>/<name>``)."""
        return f"{_op_name(var)}/{self._name}"

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

        if not graph.core.building():
            return self._apply_eagerly(core, var_list)
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

    def _apply_eagerly(self, core, var_list):
        if var_list is None:
            raise TypeError("apply: var_list must be given when executing eagerly (TF 2 has "
                            "no trainable-variables collection), got None")
        var_list = list(var_list)
        for var in var_list:
            if not isinstance(var, core.Variable):
                raise TypeError("tf.train.ExponentialMovingAverage does not support "
                                "non-Variable tensors when eager execution is enabled.")
            if var.dtype.name not in ("float16", "float32", "float64", "bfloat16"):
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
        for var in var_list:
            if self._key(var) not in self._averages:
                self._averages[self._key(var)] = core.Variable(
                    var.read_value(), trainable=False, name=self.average_name(var))
                self._averaged[self._key(var)] = var
        decay = self._decay_value(core)
        for var in var_list:
            _update(self._averages[self._key(var)], var, decay)
        return None

    def _decay_value(self, core):
        decay = core.cast(self._decay, core.float32)
        if self._num_updates is None:
            return decay
        n = core.cast(self._num_updates, core.float32)
        return core.minimum(decay, (1.0 + n) / (10.0 + n))

    def variables_to_restore(self, moving_avg_variables=None) -> dict:
        """{checkpoint name: variable} restoring each averaged variable (default: the
        trainable and moving-average variables) from its shadow's name and every other
        global variable from its own (TF's map, for ``Saver(var_list=...)``)."""
        from ... import graph

        if not graph.core.building() and moving_avg_variables is None:
            return {self.average_name(v): v for v in self._averaged.values()}
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


def _op_name(var) -> str:
    """A graph variable's op name; an eager variable's name without its ``:0``."""
    op = getattr(var, "op", None)
    if op is not None:
        return op.name
    return var.name.rsplit(":", 1)[0]
