"""``tf.Module``: a named container of variables and sub-modules, which ``tf.saved_model``
saves (its ``tf.function`` methods and the variables they read)."""

from __future__ import annotations

import re

from .core.tensor import Variable

__all__ = ["Module"]


def _snake(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


class Module:
    """Base class of neural-network modules (``tf.Module``).

    ``variables``, ``trainable_variables`` and ``submodules`` are found by walking the
    module's attributes (and lists, tuples and dicts of them), each object once, in sorted
    attribute order as TF walks them."""

    def __init__(self, name=None):
        if name is None:
            name = _snake(type(self).__name__)
        elif not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][\w.\-]*", name):
            raise ValueError(f"'{name}' is not a valid module name. Module names must be "
                             "valid Python identifiers (e.g. a valid class name).")
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def name_scope(self):
        from .graph.core import get_default_graph

        return get_default_graph().name_scope(self._name)

    def _flatten(self, predicate):
        seen, out = {id(self)}, []

        def walk(x):
            if isinstance(x, dict):
                for k in sorted(x, key=str):
                    walk(x[k])
                return
            if isinstance(x, (list, tuple)):
                for v in x:
                    walk(v)
                return
            if id(x) in seen:
                return
            seen.add(id(x))
            if predicate(x):
                out.append(x)
            if isinstance(x, Module):
                walk(_attributes(x))
        walk(_attributes(self))
        return tuple(out)

    @property
    def variables(self) -> tuple:
        """The variables of this module and its sub-modules."""
        return self._flatten(lambda x: isinstance(x, Variable))

    @property
    def trainable_variables(self) -> tuple:
        """The trainable variables of this module and its sub-modules."""
        return self._flatten(lambda x: isinstance(x, Variable) and x.trainable)

    @property
    def submodules(self) -> tuple:
        """The modules reachable from this one (not itself)."""
        return self._flatten(lambda x: isinstance(x, Module))

    @classmethod
    def with_name_scope(cls, method):
        """``method`` unchanged (ipu_gpu's eager ops carry no name scopes)."""
        return method

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self._name!r}>"


def _attributes(module) -> dict:
    return {k: v for k, v in vars(module).items() if k != "_name"}
