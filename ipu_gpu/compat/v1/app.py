"""``tf.compat.v1.app`` (TF 1.15): ``run`` and ``flags``."""

from __future__ import annotations

import sys

from . import flags as _flags_module

__all__ = ["flags", "run"]

flags = _flags_module


def run(main=None, argv=None):
    """Parses the flags of ``argv`` (default ``sys.argv``), leaving undefined ones among
    the arguments, then exits with ``main(arguments)``'s value (``main`` defaults to the
    ``__main__`` module's ``main``), as TF 1.15's ``tf.app.run``."""
    main = main or sys.modules["__main__"].main
    args = flags.FLAGS(sys.argv if argv is None else argv, known_only=True)
    sys.exit(main(args))
