"""``python -m ipu_gpu [OPTIONS] PROGRAM.py [ARGS...]``: the same as ``ipu-gpu run``."""

import argparse
import sys

from .cli import add_run_arguments, run_argv, run_command


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ipu_gpu", description="run an unmodified IPU program on ipu_gpu "
        "(the same as `ipu-gpu run`; `python -m ipu_gpu.cli` has the other commands)")
    add_run_arguments(parser)
    return run_command(parser.parse_args(run_argv(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    sys.exit(main())
