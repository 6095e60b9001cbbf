"""``keras.utils.Progbar``: the progress lines ``fit``/``evaluate``/``predict`` print.

The output is TF-Keras 2's, character for character (tf_keras 2.21's ``generic_utils.Progbar``,
which Keras 2.6 prints identically except that its ``verbose=2`` line ends after the metrics,
without the `` - 1s/epoch - 12ms/step`` tail):

- ``verbose=1``: one bar redrawn in place, ``12/100 [==>.....] - ETA: 3s - loss: 0.1234``,
  at most every ``interval`` seconds, and a final ``100/100 [======] - 1s 12ms/step - loss:
  ...`` line ending in a newline. Keras redraws with ``\\b``s and ``\\r`` when the display is
  "dynamic" (stdout is a terminal, or Jupyter, PyCharm, or any POSIX system: Keras tests
  ``'posix' in sys.modules``, so on Linux and macOS the display is always dynamic, also when
  stdout is a file or a pipe); otherwise each update starts a new line.
- ipu_gpu adds one field beyond Keras: when ``fit`` runs on an IPUStrategy, the final
  ``verbose=1`` line of each epoch ends with `` - 1234.5 samples/s`` (the epoch's samples over
  all replicas, divided by its wall time), after Keras's unchanged fields.
- ``verbose=2``: one line when the bar finishes: ``100/100 - 1s - loss: ... - 1s/epoch -
  12ms/step``.

Values named in ``stateful_metrics`` are shown as given; the others are averaged over the
steps seen, each update weighted by the steps it covers.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

__all__ = ["Progbar", "print_msg"]


def print_msg(message: str, line_break: bool = True) -> None:
    """Writes ``message`` to stdout and flushes (Keras's ``io_utils.print_msg``)."""
    sys.stdout.write(message + "\n" if line_break else message)
    sys.stdout.flush()


def _dynamic_display() -> bool:
    return ((hasattr(sys.stdout, "isatty") and sys.stdout.isatty())
            or "ipykernel" in sys.modules
            or "posix" in sys.modules
            or "PYCHARM_HOSTED" in os.environ)


def _format_time(seconds: float, unit_name: str) -> str:
    if seconds >= 1 or seconds == 0:
        return f" {seconds:.0f}s/{unit_name}"
    if seconds >= 1e-3:
        return f" {seconds * 1e3:.0f}ms/{unit_name}"
    return f" {seconds * 1e6:.0f}us/{unit_name}"


def _format_eta(eta: float) -> str:
    # int() truncates as %d does
    if eta > 3600:
        return f"{int(eta // 3600)}:{int((eta % 3600) // 60):02d}:{int(eta % 60):02d}"
    if eta > 60:
        return f"{int(eta // 60)}:{int(eta % 60):02d}"
    return f"{int(eta)}s"


class Progbar:
    """Displays a progress bar.

    Args:
      target: Total number of steps expected, None if unknown.
      width: Progress bar width on screen.
      verbose: Verbosity mode, 0 (silent), 1 (verbose), 2 (semi-verbose)
      stateful_metrics: Iterable of string names of metrics that should *not* be averaged
        over time. Metrics in this list will be displayed as-is. All others will be averaged
        by the progbar before display.
      interval: Minimum visual progress update interval (in seconds).
      unit_name: Display name for step counts (usually "step" or "sample").
    """

    def __init__(self, target, width=30, verbose=1, interval=0.05, stateful_metrics=None,
                 unit_name="step"):
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        self.stateful_metrics = set(stateful_metrics) if stateful_metrics else set()
        self._dynamic_display = _dynamic_display()
        self._total_width = 0
        self._seen_so_far = 0
        self._values: dict = {}  # name -> [weighted sum, weight] (averaged) or [value, 1]
        self._values_order: list = []
        self._start = time.time()
        self._last_update = 0
        self._time_at_epoch_start = self._start
        self._time_at_epoch_end = None
        self._time_after_first_step = None
        # ipu_gpu's addition: samples seen this epoch (fit on an IPUStrategy sets it); the
        # final verbose=1 line then ends with `` - N samples/s``.
        self.samples = None

    def update(self, current, values=None, finalize=None):
        """Updates the progress bar.

        Args:
          current: Index of current step.
          values: List of tuples: ``(name, value_for_last_step)``. If ``name`` is in
            ``stateful_metrics``, ``value_for_last_step`` will be displayed as-is. Else, an
            average of the metric over time will be displayed.
          finalize: Whether this is the last update for the progress bar. If None, uses
            ``current >= self.target``.
        """
        if finalize is None:
            finalize = False if self.target is None else current >= self.target
        self._accumulate(current, values or [])
        now = time.time()
        elapsed = f" - {now - self._start:.0f}s"
        if current == self.target:
            self._time_at_epoch_end = now
        if self.verbose == 1:
            if now - self._last_update < self.interval and not finalize:
                return
            print_msg(self._bar_message(current, now, elapsed, finalize), line_break=False)
        elif self.verbose == 2 and finalize:
            print_msg(self._line_message(current, now, elapsed), line_break=False)
        self._last_update = now

    def add(self, n, values=None):
        self.update(self._seen_so_far + n, values)

    def _update_stateful_metrics(self, stateful_metrics):
        self.stateful_metrics = self.stateful_metrics.union(stateful_metrics)

    # ---- internals ----------------------------------------------------------------------
    def _accumulate(self, current, values) -> None:
        for k, v in values:
            if k not in self._values_order:
                self._values_order.append(k)
            if k in self.stateful_metrics:
                self._values[k] = [v, 1]
                continue
            # At least 1: with an unknown target, on_batch_end and on_epoch_end may report
            # the same ``current`` twice.
            base = max(current - self._seen_so_far, 1)
            if k not in self._values:
                self._values[k] = [v * base, base]
            else:
                self._values[k][0] += v * base
                self._values[k][1] += base
        self._seen_so_far = current

    def _average(self, k):
        total, count = self._values[k]
        return np.mean(total / max(1, count))

    def _bar_message(self, current, now, info, finalize) -> str:
        previous_width = self._total_width
        message = ("\b" * previous_width + "\r") if self._dynamic_display else "\n"
        if self.target is not None:
            digits = int(np.log10(self.target)) + 1
            bar = f"{int(current):{digits}d}/{int(self.target)} ["
            filled = int(self.width * (float(current) / self.target))
            if filled > 0:
                bar += "=" * (filled - 1) + (">" if current < self.target else "=")
            bar += "." * (self.width - filled) + "]"
        else:
            bar = f"{int(current):7d}/Unknown"
        self._total_width = len(bar)
        message += bar

        per_unit = self._estimate_step_duration(current, now)
        if self.target is None or finalize:
            info += _format_time(per_unit, self.unit_name)
        else:
            info = f" - ETA: {_format_eta(per_unit * (self.target - current))}"
        for k in self._values_order:
            info += f" - {k}:"
            if isinstance(self._values[k], list):
                avg = self._average(k)
                info += f" {avg:.4f}" if abs(avg) > 1e-3 else f" {avg:.4e}"
            else:
                info += f" {self._values[k]}"
        self._total_width += len(info)
        if previous_width > self._total_width:
            info += " " * (previous_width - self._total_width)
        if finalize:
            if self.samples:
                info += f" - {self.samples / max(now - self._start, 1e-9):.1f} samples/s"
            info += "\n"
        return message + info

    def _line_message(self, current, now, info) -> str:
        digits = int(np.log10(self.target)) + 1
        info = f"{int(current):{digits}d}/{int(self.target)}" + info
        for k in self._values_order:
            avg = self._average(k)
            # Keras compares the signed value here (abs() only on the verbose=1 bar).
            info += f" - {k}:" + (f" {avg:.4f}" if avg > 1e-3 else f" {avg:.4e}")
        if self._time_at_epoch_end:
            per_epoch = self._time_at_epoch_end - self._time_at_epoch_start
            self._time_at_epoch_start = now
            self._time_at_epoch_end = None
            info += " -" + _format_time(per_epoch, "epoch")
            info += " -" + _format_time(per_epoch / self.target, self.unit_name)
            info += "\n"
        return info

    def _estimate_step_duration(self, current, now) -> float:
        """Seconds per step, ignoring the first step (compilation, warm-up) once more steps
        are done; 0 before the first step."""
        if not current:
            return 0
        if self._time_after_first_step is not None and current > 1:
            per_unit = (now - self._time_after_first_step) / (current - 1)
        else:
            per_unit = (now - self._start) / current
        if current == 1:
            self._time_after_first_step = now
        return per_unit
