"""Dtype policies (``keras.mixed_precision.Policy``): the dtype a layer's variables are
created in and the dtype its computations run in.

``float16``/``float32``/``float64`` set both. ``mixed_float16`` keeps float32 variables
(AutoCastVariables, read as float16 inside the layer's call) and computes in float16.
``mixed_bfloat16`` policies can be made (compute dtype ``"bfloat16"``), but a layer given one
raises NotImplementedError: ipu_gpu, like the IPU, has no bfloat16."""

from __future__ import annotations

import contextlib

import numpy as np

from .. import backend

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}
_global_policy = None


class Policy:
    """A dtype policy: ``name`` is a dtype name or ``mixed_float16``/``mixed_bfloat16``."""

    def __init__(self, name):
        if isinstance(name, np.dtype):
            name = name.name
        if not isinstance(name, str):
            raise TypeError(f"'name' must be a string, not a DType. Instead, pass DType.name. "
                            f"Received: name={name} (of type {type(name)})")
        self._name = name
        if name in _MIXED:
            self._compute_dtype, self._variable_dtype = _MIXED[name], "float32"
        elif name == "_infer":
            self._compute_dtype = self._variable_dtype = None
        else:
            try:
                dtype = np.dtype(name).name
            except TypeError:
                raise ValueError(f"Cannot convert value {name} to a mixed precision Policy. "
                                 "Valid policies include 'mixed_float16', 'mixed_bfloat16', "
                                 "and the name of any dtype such as 'float32'.") from None
            self._compute_dtype = self._variable_dtype = dtype

    @property
    def _compute_np(self) -> np.dtype:
        """The compute dtype as a numpy dtype (cached: the layer call reads it)."""
        cached = self.__dict__.get("_compute_np_value")
        if cached is None:
            cached = self._compute_np_value = np.dtype(self._compute_dtype or "float32")
        return cached

    @property
    def name(self) -> str:
        return self._name

    @property
    def compute_dtype(self):
        return self._compute_dtype

    @property
    def variable_dtype(self):
        return self._variable_dtype

    def get_config(self) -> dict:
        return {"name": self._name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self) -> str:
        return f'<Policy "{self._name}">'


class PolicyV1(Policy):
    """The deprecated ``keras.mixed_precision.experimental.Policy``: a Policy with a
    ``loss_scale`` that ``Model.compile`` uses (``"auto"``: ``"dynamic"`` for
    ``mixed_float16``, else None; a number: a fixed scale)."""

    def __init__(self, name, loss_scale="auto"):
        super().__init__(name)
        self._using_default_loss_scale = loss_scale == "auto"
        if self._using_default_loss_scale:
            loss_scale = "dynamic" if name == "mixed_float16" else None
        self._loss_scale = loss_scale

    @property
    def loss_scale(self):
        return self._loss_scale

    def get_config(self) -> dict:
        config = {"name": self._name}
        if not self._using_default_loss_scale:
            config["loss_scale"] = self._loss_scale
        return config

    def __repr__(self) -> str:
        return f'<PolicyV1 "{self._name}", loss_scale={self._loss_scale!r}>'


def global_policy() -> Policy:
    """The policy layers get when given no dtype: ``set_global_policy``'s, else floatx()."""
    if _global_policy is not None:
        return _global_policy
    return Policy(backend.floatx())


def set_global_policy(policy) -> None:
    """Set the policy of layers created from now on (None: back to floatx())."""
    global _global_policy
    _global_policy = None if policy is None else (
        policy if isinstance(policy, Policy) else Policy(policy))


set_policy = set_global_policy  # Keras 2.6's name (also mixed_precision.experimental's)


@contextlib.contextmanager
def policy_scope(policy):
    """Layers made inside the scope get ``policy``; the global policy is restored after."""
    old = _global_policy
    try:
        set_global_policy(policy)
        yield
    finally:
        set_global_policy(old)


def serialize(policy: Policy):
    """A plain dtype policy serializes to its name, as in Keras 2."""
    if policy.name == policy.compute_dtype == policy.variable_dtype:
        return policy.name
    return {"class_name": "Policy", "config": policy.get_config()}


def deserialize(config) -> Policy:
    if isinstance(config, dict):
        return Policy.from_config(config.get("config", config))
    return Policy(config)
