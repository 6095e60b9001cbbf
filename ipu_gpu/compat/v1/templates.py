"""``tf.compat.v1.make_template`` and ``report_uninitialized_variables`` (TF 1.15).

A template wraps a function that makes its variables with ``get_variable``: the first call
opens the variable scope ``name_`` (made unique: ``tmpl``, ``tmpl_1``) and makes them, later
calls re-enter that scope reusing them, their ops in a fresh name scope named after the
scope (``tmpl_1/...``), as TF's ``Template``. A later call that makes a new trainable
variable raises TF's ValueError.
"""

from __future__ import annotations

import functools
import sys

import numpy as np

from .variable_scope import dense as _dense  # noqa: F401 - loads the module

__all__ = ["Template", "make_template", "report_uninitialized_variables"]

_vs = sys.modules[f"{__package__}.variable_scope"]  # the package's name is the function


def _graph():
    from ... import graph

    return graph


class Template:
    """A function whose variables are made on the first call and shared by later ones
    (``tf.compat.v1.make_template``'s result)."""

    def __init__(self, name, func, create_scope_now=False, unique_name=None,
                 custom_getter=None):
        if name is None:
            raise ValueError("name cannot be None.")
        self._func, self._name = func, name
        self._unique_name, self._custom_getter = unique_name, custom_getter
        self._variable_scope = None
        self._variables_created = False
        if create_scope_now:
            with _vs.variable_scope(unique_name, default_name=name,
                                    custom_getter=custom_getter,
                                    auxiliary_name_scope=False) as scope:
                self._variable_scope = scope

    def __call__(self, *args, **kwargs):
        with _vs.owned_store(self):  # eagerly, the template's variables are its store's
            return self._call(args, kwargs)

    def _call(self, args, kwargs):
        g = _graph().get_default_graph()
        if self._variable_scope is None:
            with _vs.variable_scope(self._unique_name, default_name=self._name,
                                    custom_getter=self._custom_getter) as scope:
                self._variable_scope = scope
                return self._call_func(g, args, kwargs)
        short = self._variable_scope.name.rsplit("/", 1)[-1]
        with _vs.variable_scope(self._variable_scope, reuse=self._variables_created), \
                g.name_scope(short):
            return self._call_func(g, args, kwargs)

    def _call_func(self, g, args, kwargs):
        trainable_at_start = len(g.get_collection("trainable_variables"))
        result = self._func(*args, **kwargs)
        if self._variables_created:
            made = g.get_collection("trainable_variables")[trainable_at_start:]
            if made:
                raise ValueError("Trainable variable created when calling a template after "
                                 "the first time, perhaps you used tf.Variable when you "
                                 f"meant tf.get_variable: {made}")
        self._variables_created = True
        return result

    @property
    def name(self) -> str:
        return self._name

    @property
    def func(self):
        return self._func

    @property
    def variable_scope(self):
        return self._variable_scope

    @property
    def variable_scope_name(self):
        """The variable scope's name with a trailing slash (None before it exists)."""
        if self._variable_scope is None:
            return None
        name = self._variable_scope.name
        return name + "/" if name and not name.endswith("/") else name

    def _collection(self, key) -> list:
        if self._variable_scope is None:
            return []
        store = self.__dict__.get("_eager_variable_store")
        if store is not None:  # made eagerly: the template's own store holds them
            return {"variables": store.variables, "local_variables": list,
                    "trainable_variables": store.trainable_variables}[key]()
        return _graph().get_default_graph().get_collection(key, self.variable_scope_name)

    @property
    def variables(self) -> list:
        return self.global_variables + self.local_variables

    @property
    def global_variables(self) -> list:
        return self._collection("variables")

    @property
    def local_variables(self) -> list:
        return self._collection("local_variables")

    @property
    def trainable_variables(self) -> list:
        return self._collection("trainable_variables")

    @property
    def non_trainable_variables(self) -> list:
        trainable = {id(v) for v in self.trainable_variables}
        return [v for v in self.global_variables if id(v) not in trainable]

    trainable_weights = trainable_variables
    non_trainable_weights = non_trainable_variables
    weights = variables


def make_template(name_, func_, create_scope_now_=False, unique_name_=None,
                  custom_getter_=None, **kwargs) -> Template:
    """``func_`` (with ``kwargs`` bound) as a ``Template`` sharing its variables.

    Raises:
      ValueError: ``name_`` is None (TF's message)."""
    return Template(name_, functools.partial(func_, **kwargs) if kwargs else func_,
                    create_scope_now=create_scope_now_, unique_name=unique_name_,
                    custom_getter=custom_getter_)


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    """A 1-D string tensor of the names of ``var_list``'s variables (default: the global and
    local ones) not initialized when it runs, in order (bytes, as TF's string tensor)."""
    graph = _graph()
    g = graph.get_default_graph()
    if var_list is None:
        var_list = g.get_collection("variables") + g.get_collection("local_variables")
    variables = [v for v in var_list if isinstance(v, graph.GraphVariable)]

    def run():
        return np.array([v.op.name.encode() for v in variables if v._variable is None],
                        dtype=object).reshape(-1)
    return graph.core.add_node(g, "ReportUninitializedVariables", name, [], run,
                               [(np.dtype(object), [None])]).outputs[0]
