"""The core layer: backend choice, dtypes, Tensor/Variable, the tape and the op registry."""

from .host_memory import pool_host_memory

pool_host_memory()  # before the first op allocates (host_memory.py says why)
