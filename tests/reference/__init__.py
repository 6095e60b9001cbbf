"""Plain numpy float64 reference implementations of the public ops, one module per op family
(mirroring ``ipu_gpu/ops``), written from the math and TensorFlow's documented semantics.

Nothing here may import ipu_gpu (``tests/test_reference_isolation.py`` enforces it): a
reference that shares code with the implementation cannot catch its bugs.
"""
