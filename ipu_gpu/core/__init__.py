"""The core layer: backend choice, dtypes, Tensor/Variable, the tape and the op registry."""
