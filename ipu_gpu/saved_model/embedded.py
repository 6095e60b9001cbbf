"""A SavedModel function that runs an embedded executable (what ``ipu.serving`` exports):
the optional preprocessing program, one ``embedded_runtime_call`` of the executable under
``assets/``, the optional postprocessing program, outputs named by ``output_names``."""

from __future__ import annotations

import os

__all__ = ["embedded_runner"]


def embedded_runner(export_dir: str, entry: dict):
    """``run(values)`` of the exported predict function described by ``entry``."""
    from ..graph.core import eager_scope
    from ..ipu import embedded_runtime
    from .save_load import load_program, unpack

    path = os.path.join(export_dir, entry["executable"])
    pre = entry.get("preprocessing")
    post = entry.get("postprocessing")
    pre_program = load_program(export_dir, pre["program"], []) if pre else None
    post_program = load_program(export_dir, post["program"], []) if post else None
    names = entry.get("output_names")

    def run(values):
        with eager_scope():
            args = list(values)
            if pre_program is not None:
                args = pre_program.run("outputs", dict(enumerate(args)))
            context = embedded_runtime.embedded_runtime_start(path, [], entry["engine_name"])
            ret = embedded_runtime.embedded_runtime_call(args, context)
            if post_program is not None:
                ret = unpack(post["outputs"], post_program.run("outputs",
                                                               dict(enumerate(ret))))
        if names:
            flat = ret if isinstance(ret, (list, tuple)) else [ret]
            if len(flat) != len(names):
                raise ValueError("Length of output_names does not match the number of results "
                                 "returned by the predict function.")
            return dict(zip(names, flat))
        return ret
    return run
