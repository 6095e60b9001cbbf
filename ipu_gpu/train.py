"""``tf.train``: the ``tf.train.Example`` protocol-buffer classes programs write TFRecords with,
the checkpoint state functions (``latest_checkpoint``, ``get_checkpoint_state``) of
``graph/saver.py`` and ``Coordinator`` (TF1's optimizers, Saver and monitored sessions come
with the TF1 graph layer and ``tf.compat.v1.train``)."""

import contextlib
import threading

from . import errors
from .io import BytesList, Example, Feature, Features, FloatList, Int64List

__all__ = ["BytesList", "Coordinator", "Example", "Feature", "Features", "FloatList",
           "Int64List", "get_checkpoint_state", "latest_checkpoint"]
__all__ += ["Checkpoint", "CheckpointManager", "ExponentialMovingAverage"]  # noqa: F822 - lazy


def __getattr__(name):
    # loaded on first use: tf.train.Checkpoint/CheckpointManager (object checkpoints) and
    # TF 2's ExponentialMovingAverage (the TF 1 class, which also works eagerly)
    if name == "Checkpoint":
        from .object_checkpoint import Checkpoint

        return Checkpoint
    if name == "CheckpointManager":
        from .checkpoint_manager import CheckpointManager

        return CheckpointManager
    if name == "ExponentialMovingAverage":
        from .compat.v1.moving_averages import ExponentialMovingAverage

        return ExponentialMovingAverage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest checkpoint the ``checkpoint`` state file in ``checkpoint_dir``
    names (Keras's ``save_weights`` and TF1's Saver write one), or None."""
    from .graph import saver

    return saver.latest_checkpoint(checkpoint_dir, latest_filename)


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The ``CheckpointState`` of the state file in ``checkpoint_dir``, or None."""
    from .graph import saver

    return saver.get_checkpoint_state(checkpoint_dir, latest_filename)


class Coordinator:
    """``tf.compat.v1.train.Coordinator``: a stop flag threads share, with the first
    exception reported to ``request_stop`` re-raised by ``join`` and
    ``raise_requested_exception``."""

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._exception = None
        self._threads: set = set()

    def request_stop(self, ex=None) -> None:
        """Asks every thread to stop; ``ex`` (an exception), unless it is a clean stop,
        is kept to be re-raised."""
        with self._lock:
            if isinstance(ex, tuple):
                ex = ex[1]
            if ex is not None and not isinstance(ex, self._clean) \
                    and self._exception is None:
                self._exception = ex
            self._stop.set()

    def clear_stop(self) -> None:
        with self._lock:
            self._exception = None
            self._stop.clear()

    def should_stop(self) -> bool:
        return self._stop.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """Inside the block an exception requests a stop (and is kept) instead of
        propagating."""
        try:
            yield
        except Exception as e:  # noqa: BLE001 - TF's contract: report, do not raise
            self.request_stop(e)

    def wait_for_stop(self, timeout=None) -> bool:
        return self._stop.wait(timeout)

    def register_thread(self, thread) -> None:
        with self._lock:
            self._threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Waits for the registered threads and ``threads`` to end, then re-raises the
        exception a thread reported.

        Raises:
          RuntimeError: threads still running after ``stop_grace_period_secs`` (unless
            ``ignore_live_threads``)."""
        with self._lock:
            threads = set(self._threads) | set(threads or [])
        for t in threads:
            t.join(stop_grace_period_secs)
        alive = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._threads = set()
        self.raise_requested_exception()
        if alive and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running: "
                               f"{' '.join(alive)}")

    def raise_requested_exception(self) -> None:
        with self._lock:
            ex = self._exception
        if ex is not None:
            raise ex

    @property
    def joined(self) -> bool:
        return not self._threads
