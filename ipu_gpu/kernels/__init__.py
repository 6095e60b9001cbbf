"""Pure compute kernels: ``<family>_cpu`` (Numba/numpy) and ``<family>_gpu`` (CuPy) twins with
the same function names and signatures. Arrays in, preallocated arrays out. Nothing here is
imported, and so nothing is compiled, until an op needs it."""
