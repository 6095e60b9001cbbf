"""A training model's weights written back to its host module lazily, as PopTorch does
(``_poplar_executor.PoplarExecutor.__init__``, research/poptorch_semantics.md 3.5).

After a call the device's weights are newer than the host module's, and nothing is copied
yet: the host module gets them the first time it is read, through wrapper classes PopTorch
installs when it wraps the module for training (and removes at ``destroy()``):

* the module's class becomes ``Poptorch<Name>``, a subclass that copies before ``_parameters``,
  ``_buffers`` or ``forward`` is read (``state_dict``, ``parameters()``, a forward on the host)
  and before ``module.weight`` returns a parameter; it also gains PopTorch's
  ``copyWeightsToHostIfNeeded()`` and ``destroy()``;
* every parameter and buffer gets a subclass that copies before any attribute is read, a
  torch function included (a reference kept from before training sees the new values).

While a model runs on the device, ``suspended()`` puts the plain classes back, so the
forward pays nothing for the hooks. The copy itself and the host module's weights version (an
inference model of the same module re-copies the weights when it moves) live here, not in the
executor: a host read after the executor is gone still gets the trained weights. Pickling or
deep-copying a wrapped object gives the plain class, as PopTorch's ``_pickleUnwrapObject``.
"""

from __future__ import annotations

import copyreg
import weakref

import torch

__all__ = ["HostSync", "of", "plain_type", "unwrapped"]

# id(wrapped object) -> its HostSync. One wrapper class per plain class, shared by every
# training model (parameters of two models compare as the same class), finds its object's
# copy here; entries go at unwrapping.
_SYNCS = {}
_WRAPPERS = {}  # plain class -> its wrapper class
_BASES = {}  # wrapper class -> the plain class
_HOOKED = frozenset(("_parameters", "_buffers", "forward"))


def of(module):
    """The module's ``HostSync`` if a training model wrapped it, else None."""
    return _SYNCS.get(id(module))


def _flush_for(obj) -> None:
    sync = _SYNCS.get(id(obj))
    if sync is not None and sync.pending is not None:
        sync.flush()


def plain_type(obj) -> type:
    """``type(obj)`` without the wrapper class."""
    cls = type(obj)
    return _BASES.get(cls, cls)


class unwrapped:  # noqa: N801 - used as a context manager
    """The plain classes of the module's wrapped objects for the body (a no-op for a module no
    training model wraps)."""

    __slots__ = ("_sync",)

    def __init__(self, module):
        self._sync = _SYNCS.get(id(module))

    def __enter__(self):
        if self._sync is not None:
            self._sync.suspend()

    def __exit__(self, *exc):
        if self._sync is not None:
            self._sync.resume()
        return False


class HostSync:
    """The wrappers of one module and its pending device-to-host copy."""

    def __init__(self, module, executor) -> None:
        self.pending = None  # {key: (host tensor, device tensor)} the host has not read yet
        self.version = 0  # bumped by every copy to the host
        self._owner = weakref.ref(executor)
        self._depth = 0  # suspend() nesting
        self._installed = False
        # weak references: the wrapper classes hold this object, which must not keep the
        # module alive
        self._module = self._ref(module)
        self._objects = [(self._module, type(module), _wrapper(type(module), _module_wrapper))]
        seen = {id(module)}
        for t in [*module.parameters(), *module.buffers()]:
            if id(t) not in seen:
                seen.add(id(t))
                self._objects.append((self._ref(t), type(t),
                                      _wrapper(type(t), _tensor_wrapper)))

    def _ref(self, obj):
        """A weak reference that drops ``obj``'s entry in ``_SYNCS`` when it dies."""
        key = id(obj)

        def forget(_):
            if _SYNCS.get(key) is self:
                del _SYNCS[key]
        return weakref.ref(obj, forget)

    @staticmethod
    def supports(module) -> bool:
        """Whether every parameter is an ``nn.Parameter`` and every buffer a plain tensor
        (the objects whose classes can be swapped; PopTorch refuses other buffers)."""
        # lazy modules' tensors change class when they materialise
        return (all(type(p) is torch.nn.Parameter for p in module.parameters())
                and all(type(b) is torch.Tensor for b in module.buffers()))

    def install(self) -> bool:
        """Wrap; False (and nothing wrapped) where a class cannot be swapped (a scripted
        module's, say)."""
        for ref, _, _ in self._objects:
            _SYNCS[id(ref())] = self
        self._installed = True
        try:
            self._set(wrapped=True)
        except TypeError:
            self.remove()
            return False
        return True

    def remove(self) -> None:
        """Unwrap for good (``destroy()``), after the pending copy."""
        self.flush()
        self._set(wrapped=False)
        self._depth = 0
        self._installed = False
        for ref, _, _ in self._objects:
            obj = ref()
            if obj is not None and _SYNCS.get(id(obj)) is self:
                del _SYNCS[id(obj)]

    def _set(self, wrapped: bool) -> None:
        for ref, plain, wrapper in self._objects:
            obj = ref()
            target = wrapper if wrapped else plain
            if obj is not None and type(obj) is not target and type(obj) in (plain, wrapper):
                # what ``obj.__class__ = target`` ends in, without Module.__setattr__'s checks
                object.__setattr__(obj, "__class__", target)

    def suspend(self) -> None:
        """The plain classes until the matching ``resume()`` (nests)."""
        if self._depth == 0:
            self._set(wrapped=False)
        self._depth += 1

    def resume(self) -> None:
        self._depth -= 1
        if self._depth == 0 and self._installed:
            self._set(wrapped=True)

    def flush(self) -> bool:
        """Copy the pending device weights to the host; whether there were any."""
        pending = self.pending
        if pending is None:
            return False
        self.pending = None
        self.suspend()
        try:
            with torch.no_grad():
                for host, device in pending.values():
                    host.copy_(device)
        finally:
            self.resume()
        self.version += 1
        return True

    def owner(self):
        return self._owner()


def _wrapper(cls, make):
    wrapper = _WRAPPERS.get(cls)
    if wrapper is None:
        wrapper = _WRAPPERS[cls] = make(cls)
        wrapper.__module__ = cls.__module__
        _BASES[wrapper] = cls
    return wrapper


def _module_wrapper(cls):
    class Wrapped(cls):
        def __getattribute__(self, name):
            if name in _HOOKED:
                _flush_for(self)
            return super().__getattribute__(name)

        def __getattr__(self, name):
            value = super().__getattr__(name)
            if isinstance(value, torch.nn.Parameter):
                _flush_for(self)
            return value

        def copyWeightsToHostIfNeeded(self) -> bool:  # noqa: N802 - PopTorch's name
            """Copy the device's weights to this module if they are newer; whether it did."""
            sync = _SYNCS.get(id(self))
            return sync.flush() if sync is not None else False

        def destroy(self) -> None:
            """The training model's ``destroy()``."""
            sync = _SYNCS.get(id(self))
            owner = sync.owner() if sync is not None else None
            if owner is not None:
                owner.destroy()

        def __reduce_ex__(self, protocol):
            return _plain_reduce(self, protocol)

    Wrapped.__name__ = f"Poptorch{cls.__name__}"
    Wrapped.__qualname__ = f"Poptorch{cls.__qualname__}"
    return Wrapped


def _tensor_wrapper(cls):
    class Wrapped(cls):
        def __getattribute__(self, name):
            _flush_for(self)
            return super().__getattribute__(name)

        # torch calls a subclass's __torch_function__ through an attribute read, which
        # copies first (PopTorch's PoptorchParameter: torch.equal(p, q) sees the new
        # values); results are plain tensors, as a Parameter's
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return torch._C._disabled_torch_function_impl(
                func, types, args, {} if kwargs is None else kwargs)

        def __reduce_ex__(self, protocol):
            return _plain_reduce(self, protocol)

        def __deepcopy__(self, memo):
            wrapper = type(self)
            self.__class__ = _BASES[wrapper]
            try:
                return self.__deepcopy__(memo)
            finally:
                self.__class__ = wrapper

    Wrapped.__name__ = cls.__name__
    Wrapped.__qualname__ = cls.__qualname__
    return Wrapped


def _plain_reduce(obj, protocol):
    """The plain class's reduction of ``obj`` (a file stays loadable without ipu_gpu)."""
    wrapper = type(obj)
    obj.__class__ = _BASES[wrapper]
    try:
        rv = obj.__reduce_ex__(protocol)
    finally:
        obj.__class__ = wrapper
    if isinstance(rv, tuple) and rv[0] is copyreg.__newobj__ and len(rv[1]) == 1:
        # pickle checks __newobj__'s class against the object's, the wrapper again by now
        rv = (copyreg._reconstructor, (rv[1][0], object, None), *rv[2:])
    return rv
