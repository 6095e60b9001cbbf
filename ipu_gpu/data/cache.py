"""cache: the first complete iteration is kept and replayed by every later one.

In memory (``filename=""``): over an index plan only the indices are kept (the data is in memory
already), so a shuffled-then-cached dataset replays the same order and a following batch still
gathers whole batches; otherwise the elements are kept in a list. In files: elements are pickled
to ``<filename>.data-00000-of-00001`` and ``<filename>.index`` marks a complete cache (written
last); a later iteration, or a later program, whose index file exists reads the data file
instead of the input, as TF reuses its cache files. The file format is ipu_gpu's own (TF's
tensor bundle is not reproduced). An iteration stopped early keeps nothing, as TF discards
partial caches.
"""

from __future__ import annotations

import os
import pickle
import threading

import numpy as np

from .. import errors
from .dataset import Dataset


class Cache(Dataset):
    def __init__(self, input_dataset, filename):
        self._input = input_dataset
        self._inputs = (input_dataset,)
        filename = os.fspath(filename) if not isinstance(filename, (str, bytes)) else filename
        self._filename = filename.decode() if isinstance(filename, bytes) else filename
        self._memory = None  # the cached elements, or the cached index chunks
        self._lock = threading.Lock()

    def _compute_spec(self):
        return self._input.element_spec

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _probe(self):
        return self._input._probe()

    def _recorded(self, start):
        """Replays the kept items, or records the items of ``start()`` as they pass and keeps
        them if the iteration completes."""
        with self._lock:
            kept = self._memory
        if kept is not None:
            yield from kept
            return
        record = []
        it = start()
        try:
            for item in it:
                record.append(item)
                yield item
        finally:
            it.close()
        with self._lock:
            if self._memory is None:
                self._memory = record

    def _index_plan(self):
        if self._filename:
            return None
        plan = self._input._index_plan()
        if plan is None:
            return None
        return plan.with_chunks(lambda: self._recorded(plan.chunks))

    def _iter_elements(self):
        if not self._filename:
            return self._recorded(self._input._elements)
        return self._file_elements()

    # ---- files ------------------------------------------------------------------------------
    def _paths(self):
        return f"{self._filename}.index", f"{self._filename}.data-00000-of-00001"

    def _file_elements(self):
        index, data = self._paths()
        if os.path.exists(index):
            yield from _read_cache(data)
            return
        directory = os.path.dirname(os.path.abspath(data))
        if not os.path.isdir(directory):
            raise _not_found(directory)
        tmp = f"{data}.tmp-{os.getpid()}-{threading.get_ident()}"
        complete = False
        it = self._input._elements()
        try:
            with open(tmp, "wb") as f:
                for element in it:
                    pickle.dump(element, f, protocol=pickle.HIGHEST_PROTOCOL)
                    yield element
            complete = True
        finally:
            it.close()
            if complete:
                os.replace(tmp, data)
                with open(index, "wb") as f:
                    f.write(b"ipu_gpu data cache 1\n")
            elif os.path.exists(tmp):
                os.remove(tmp)


def _not_found(path):
    from ..errors import NotFoundError

    return NotFoundError(f"{path}; No such file or directory")


def _read_cache(path):
    if not os.path.exists(path):
        raise _not_found(path)
    with open(path, "rb") as f:
        while True:
            try:
                element = pickle.load(f)
            except EOFError:
                return
            except (pickle.UnpicklingError, ValueError) as e:
                raise errors.OpError(f"cache: {path} is not a cache file written by ipu_gpu "
                                     f"({e})") from e
            yield element


__all__ = ["Cache", "np"]
