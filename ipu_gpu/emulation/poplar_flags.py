"""``TF_POPLAR_FLAGS``: the environment variable Graphcore's TensorFlow reads its backend flags
from (``--use_ipu_model``, ``--use_synthetic_data``, ``--synthetic_data_categories=...``,
``--executable_cache_path=...``, ``--max_compilation_threads=N``, ...).

Read as the SDK reads it (``tensorflow/compiler/xla/parse_flags_from_env.cc``): flags separated
by whitespace, ``--name`` or ``--name=value``, a value may be quoted (``--name='a b'``,
``--name="a \\" b"``). A value that does not start with ``-`` names a file holding the flags.

Every flag of the SDK (``driver/tools/flags.cc``, current and older releases) is known with its
type. Bool flags take no value, ``=true`` or ``=false`` (the emulator also takes ``1``/``0``
and any case); int flags need ``=N``; string flags need ``=...``; ``--show_progress_bar`` is
``true``, ``false`` or ``auto``; ``--synthetic_data_initializer`` is ``random``, ``uniform``,
``normal`` or a number. A value of the wrong type is a ValueError naming ``TF_POPLAR_FLAGS``
and the flag (the SDK logs "Couldn't interpret value ..." or aborts, depending on the flag).

Honoured: ``--use_synthetic_data``, ``--synthetic_data_categories``,
``--synthetic_data_initializer`` (infeeds and outfeeds keep their data off the host; see
``synthetic_array``), ``--null_data_feed`` (infeeds), ``--use_ipu_model`` with
``--ipu_model_tiles``. Accepted and without effect, because they tune the hardware, the Poplar
compiler or its logs: every other known flag, including ``--executable_cache_path`` (nothing
is compiled, so nothing is cached and no directory is created), ``--max_compilation_threads``
and ``--show_progress_bar``.

Differences from the SDK, on purpose:

* The SDK parses the variable once per process, when it first compiles; the emulator parses
  it on every call, so a program (or a test) may change it later. Each user reads it when the
  SDK acts on it: an infeed when it starts (``initializer`` or first dequeue), an outfeed when
  it is dequeued, the IPU model's tiles at ``configure_ipu_system``.
* An unknown flag is accepted and ignored (listed in ``PoplarFlags.unknown``); the SDK aborts
  ("Unknown flag in TF_POPLAR_FLAGS").
* Text that is not a flag (``--use_synthetic_data true``) is a ValueError; the SDK silently
  stops reading there, dropping every flag after it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

ENV = "TF_POPLAR_FLAGS"

SYNTHETIC_DATA_CATEGORIES = ("seed", "infeed", "outfeed", "hostembedding", "parameters")
_CATEGORIES_USAGE = ("A comma separated list of values that can be used for finer control "
                     "over which kinds of data are made synthetic. Valid values are.. "
                     "infeed/outfeed/seed/hostembedding/parameters.")

# The SDK's flags and defaults (flags.h); the last four of each kind are from older releases.
_BOOL_FLAGS = ("help", "use_synthetic_data", "use_ipu_model", "dump_schedule_as_dot",
               "fallback_scheduler", "allow_nans", "null_data_feed", "use_on_demand",
               "sync_replica_start", "enable_hlo_verifier", "disable_poplar_version_check",
               "force_replicated_mode", "add_all_reduce_copies", "dump_text_reports_to_stdio",
               "enable_gfloat")
_INT_FLAGS = {"log_cycle_count": -1, "while_loop_brute_force_max_trip_count": 128,
              "max_compilation_threads": -1, "max_infeed_threads": -1,
              "on_demand_device_poll_time": 1000, "on_demand_device_timeout": 3600000,
              "ipu_model_tiles": -1}
_STR_FLAGS = {"synthetic_data_categories": "", "synthetic_data_initializer": "",
              "executable_cache_path": "", "tensor_map_file_path": "",
              "show_progress_bar": "auto", "save_vertex_graph": "",
              "save_interval_report": "", "save_oom_profiler": ""}
_PROGRESS_BAR = ("true", "false", "auto")
_RANDOM_INITIALIZERS = ("random", "uniform", "normal")

_TRUE = ("", "true", "1")
_FALSE = ("false", "0")
_INT_RE = re.compile(r"\s*[+-]?\d+")
_NUMBER_RE = re.compile(r"\s*([+-]?\d+)(\.\d*)?")
_NAME_RE = re.compile(r"-[-_A-Za-z0-9]*")
_INT32 = (-(2 ** 31), 2 ** 31 - 1)


@dataclass(frozen=True)
class PoplarFlags:
    """The parsed flags; ``values`` holds every known flag (defaults included) by name."""

    use_synthetic_data: bool = False
    synthetic_data_categories: frozenset = field(default_factory=frozenset)
    synthetic_data_initializer: str = ""
    use_ipu_model: bool = False
    ipu_model_tiles: int = -1
    raw: str = ""
    null_data_feed: bool = False
    executable_cache_path: str = ""
    max_compilation_threads: int = -1
    show_progress_bar: str = "auto"
    values: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    unknown: tuple = ()  # unknown flags, as written, in order

    def use_synthetic_data_for(self, category: str) -> bool:
        """Whether data of ``category`` (one of SYNTHETIC_DATA_CATEGORIES) stays off the
        host link."""
        return self.use_synthetic_data or category in self.synthetic_data_categories


def _tokens(text: str) -> list:
    """``(name, value or None)`` per flag, split as the SDK's ParseArgvFromString splits:
    a flag is ``-`` followed by ``[-_A-Za-z0-9]``; ``=`` and a quote start a quoted value."""
    out, i, n = [], 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i == n:
            return out
        m = _NAME_RE.match(text, i)
        if m is None:
            rest = text[i:].split(None, 1)[0]
            raise ValueError(f"{ENV}: {rest!r} is not a flag (flags start with --), in "
                             f"{text!r}; the SDK stops reading {ENV} there and ignores the "
                             "rest")
        name, i = m.group(), m.end()
        if i + 1 < n and text[i] == "=" and text[i + 1] in "'\"":
            quote, i, value = text[i + 1], i + 2, []
            while i < n and text[i] != quote:
                if quote == '"' and text[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(text[i])
                i += 1
            i += 1  # past the closing quote (or the end of an unclosed value, as the SDK)
            out.append((name, "".join(value)))
        else:
            start = i
            while i < n and not text[i].isspace():
                i += 1
            word = name + text[start:i]
            flag, eq, value = word.partition("=")
            out.append((flag, value if eq else None))


def _read(text: str | None) -> str:
    raw = os.environ.get(ENV, "") if text is None else text
    if not raw.strip() or raw.lstrip()[0] == "-":
        return raw
    try:  # the SDK: a value that does not start with '-' names a file of flags
        with open(raw) as f:
            return f.read()
    except OSError as e:
        raise ValueError(
            f"{ENV}: could not open file {raw!r} to read flags ({e.strerror}); a value that "
            "does not start with -- is the name of a file holding the flags, as in the SDK. "
            f"Write the flags themselves, e.g. {ENV}='--use_synthetic_data'") from None


def _bool(name: str, value: str | None) -> bool:
    v = "" if value is None else value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ValueError(f"{ENV}: --{name} must be true or false, got {value!r}")


def _int(name: str, value: str | None) -> int:
    if value is None:
        raise ValueError(f"{ENV}: --{name} must be an integer (--{name}=N), got no value")
    if not _INT_RE.fullmatch(value):
        raise ValueError(f"{ENV}: --{name} must be an integer, got {value!r}")
    return int(value)


def _str(name: str, value: str | None) -> str:
    if value is None:
        raise ValueError(f"{ENV}: --{name} needs a value (--{name}=...), got none")
    return value


def _categories(value: str) -> frozenset:
    categories = set()
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        if part not in SYNTHETIC_DATA_CATEGORIES:
            raise ValueError(f"Using an unknown synthetic data category in: '{value}'\n"
                             f"Usage: {_CATEGORIES_USAGE}")
        categories.add(part)
    return frozenset(categories)


def _check_initializer(value: str) -> None:
    if value in _RANDOM_INITIALIZERS:
        return
    m = _NUMBER_RE.fullmatch(value)
    if m is None or not _INT32[0] <= int(m.group(1)) <= _INT32[1]:
        raise ValueError(f"{ENV}: --synthetic_data_initializer must be random, uniform, "
                         f"normal or a number (a 32-bit integer part), got {value!r}")


def parse(text: str | None = None) -> PoplarFlags:
    """The flags in ``text`` (default: the ``TF_POPLAR_FLAGS`` environment variable).

    Raises:
      ValueError: for text that is not a flag, a flag value of the wrong type, an unknown
        synthetic data category, ``--synthetic_data_initializer`` without synthetic data, or
        a file name (a value not starting with ``-``) that cannot be read.
    """
    raw = os.environ.get(ENV, "") if text is None else text
    values: dict = {name: False for name in _BOOL_FLAGS}
    values.update(_INT_FLAGS)
    values.update(_STR_FLAGS)
    unknown = []
    for flag, value in _tokens(_read(raw)):
        name = flag[2:] if flag.startswith("--") else None
        if name in _BOOL_FLAGS:
            values[name] = _bool(name, value)
        elif name in _INT_FLAGS:
            values[name] = _int(name, value)
        elif name in _STR_FLAGS:
            values[name] = _str(name, value)
        else:
            unknown.append(flag)
    categories = _categories(values["synthetic_data_categories"])
    initializer = values["synthetic_data_initializer"]
    if initializer:
        if not values["use_synthetic_data"] and not categories:
            raise ValueError('The flag "synthetic_data_initializer" can only be used in '
                             'combination with "use_synthetic_data" or '
                             '"synthetic_data_categories".')
        _check_initializer(initializer)
    if values["show_progress_bar"] not in _PROGRESS_BAR:
        raise ValueError(f"{ENV}: --show_progress_bar must be one of 'true', 'false' or "
                         f"'auto', got {values['show_progress_bar']!r}")
    if not _INT32[0] <= values["log_cycle_count"] <= _INT32[1]:
        raise ValueError(f"{ENV}: --log_cycle_count must be a 32-bit integer, got "
                         f"{values['log_cycle_count']}")
    return PoplarFlags(
        use_synthetic_data=values["use_synthetic_data"], synthetic_data_categories=categories,
        synthetic_data_initializer=initializer, use_ipu_model=values["use_ipu_model"],
        ipu_model_tiles=values["ipu_model_tiles"], raw=raw,
        null_data_feed=values["null_data_feed"],
        executable_cache_path=values["executable_cache_path"],
        max_compilation_threads=values["max_compilation_threads"],
        show_progress_bar=values["show_progress_bar"], values=MappingProxyType(values),
        unknown=tuple(unknown))


def synthetic_array(initializer: str, shape, dtype, rng: np.random.Generator | None = None):
    """A host array of ``shape``/``dtype`` holding what the SDK puts in a synthetic tensor
    for ``--synthetic_data_initializer=initializer`` (``driver/tools/data_initializer.cc``).

    * ``""`` (no initializer): zeros. The SDK leaves the tensor uninitialised (undefined
      content); zeros are a deterministic instance of it and keep index inputs in range.
    * ``random`` or ``uniform``: integers uniform over the dtype's whole range, bools 0 or 1,
      floats uniform in [smallest positive normal, largest finite] (the SDK's
      ``uniform_real_distribution(numeric_limits::min(), numeric_limits::max())``; its user
      guide says [-max, max]).
    * ``normal``: floats from N(0, 1); integers and bools 1.
    * a number: its integer part (``std::stoi``) converted to the dtype as C++'s
      ``static_cast`` does (integers wrap, bools are ``value != 0``).

    Random values come from ``rng`` (default: a fresh unseeded generator, as the SDK seeds
    from ``std::random_device``). Returns a C-contiguous numpy array.
    """
    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in shape)
    if initializer == "":
        return np.zeros(shape, dtype)
    if initializer in _RANDOM_INITIALIZERS:
        rng = np.random.default_rng() if rng is None else rng
        if initializer == "normal":
            if dtype.kind == "f":
                return rng.standard_normal(shape).astype(dtype)
            return np.ones(shape, dtype)
        if dtype.kind == "b":
            return rng.integers(0, 2, shape, dtype=np.uint8).astype(dtype)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
        info = np.finfo(dtype)
        return rng.uniform(float(info.tiny), float(info.max), shape).astype(dtype)
    m = _NUMBER_RE.fullmatch(initializer)
    if m is None:
        _check_initializer(initializer)  # raises
    value = int(m.group(1))
    if dtype.kind == "b":
        return np.full(shape, value != 0, dtype)
    if dtype.kind in "iu":  # static_cast to a narrower integer wraps (two's complement)
        return np.full(shape, np.array(value, np.int64).astype(dtype), dtype)
    with np.errstate(over="ignore"):  # an int past float16's range becomes inf, as in C++
        return np.full(shape, np.array(value, np.float64).astype(dtype), dtype)
