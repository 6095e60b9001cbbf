"""``keras.mixed_precision.policy`` (Keras 2.6's module, which programs import as
``from keras.mixed_precision import policy``): the dtype policies of ``engine/policy.py``."""

from ..engine.policy import (Policy, PolicyV1, deserialize, global_policy, policy_scope,
                             serialize, set_global_policy, set_policy)

__all__ = ["Policy", "PolicyV1", "deserialize", "global_policy", "policy_scope", "serialize",
           "set_global_policy", "set_policy"]
