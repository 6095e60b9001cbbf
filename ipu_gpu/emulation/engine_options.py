"""``POPLAR_ENGINE_OPTIONS`` and ``POPLAR_TARGET_OPTIONS``: the environment variables Poplar
reads engine and target options from, as JSON objects of option names to values
(``'{"autoReport.all":"true", "autoReport.directory":"./report"}'``,
``'{"debug.instrument":"true"}'``, ``'{"target.hostSyncTimeout":"600"}'``).

Parsed when the emulated system is configured (``system.configure`` calls ``apply``) and kept
on the System: ``engine_options`` and ``target_options`` (read-only dicts of strings) and
``report_directory`` (``autoReport.directory``, or None), for the profile reports a later layer
writes; nothing is written here. Poplar reads them when it creates each engine, so the
emulator sees a change at the next ``configure_ipu_system``.

Honoured: ``debug.allowOutOfMemory`` ("true"/"false"), which overrides the same option of
``IPUConfig.compilation_poplar_options`` (Poplar's environment options override the
program's) on every IPU's memory ledger. Every other option is accepted and has no effect:
they tune the hardware, the compiler, instrumentation or reports. Poplar rejects an option
name it does not know; the emulator cannot list them all and accepts any name.

Values: Poplar options are strings (``poplar::OptionFlags``). A JSON boolean or number is
accepted and becomes its JSON text (``true`` -> ``"true"``, ``600`` -> ``"600"``), as
Poplar's JSON reader and TensorFlow's ``asString()`` read them (PyTorch Lightning's IPU
plugin writes ``{"autoReport.all": true}``). A null, list or object value is a ValueError, as
is text that is not JSON or a JSON value that is not an object; the message names the
variable and shows the text.
"""

from __future__ import annotations

import json
import os
from types import MappingProxyType

__all__ = ["ENGINE_ENV", "TARGET_ENV", "apply", "parse"]

ENGINE_ENV = "POPLAR_ENGINE_OPTIONS"
TARGET_ENV = "POPLAR_TARGET_OPTIONS"
_EXAMPLE = '\'{"autoReport.all":"true", "autoReport.directory":"./report"}\''


def parse(text: str | None, env: str = ENGINE_ENV) -> dict:
    """The options in ``text`` (the value of the variable ``env``) as ``{name: str}``; an
    unset, empty or blank value has none.

    Raises:
      ValueError: if ``text`` is not JSON, not a JSON object, or has a null, list or object
        value.
    """
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{env} must be a JSON object of Poplar options, e.g. {env}="
                         f"{_EXAMPLE}, got {text!r}: {e.msg} at column {e.colno}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{env} must be a JSON object of Poplar options, e.g. {env}="
                         f"{_EXAMPLE}, got a JSON {type(value).__name__}: {text!r}")
    return {str(name): _option_value(env, name, v, text) for name, v in value.items()}


def _option_value(env: str, name: str, value, text: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):  # Poplar's reader takes them as their text
        return json.dumps(value)
    raise ValueError(f"{env}: option {name!r} must be a string (Poplar option values are "
                     f"strings, e.g. \"true\" or \"600\"), got {json.dumps(value)} in {text!r}")


def _bool_option(env: str, name: str, value: str) -> bool:
    v = value.strip().lower()
    if v not in ("true", "false"):
        raise ValueError(f"{env}: option {name!r} must be \"true\" or \"false\", got {value!r}")
    return v == "true"


def apply(system):
    """Read both variables, keep them on ``system`` and honour the options that change the
    emulation (see the module docstring); returns ``system``.

    Raises:
      ValueError: for a malformed variable (see ``parse``) or a ``debug.allowOutOfMemory``
        that is not "true" or "false".
    """
    engine = parse(os.environ.get(ENGINE_ENV), ENGINE_ENV)
    target = parse(os.environ.get(TARGET_ENV), TARGET_ENV)
    allow = engine.get("debug.allowOutOfMemory")
    if allow is not None:
        allow = _bool_option(ENGINE_ENV, "debug.allowOutOfMemory", allow)
        system.allow_out_of_memory = allow
        for ipu in system.ipus:
            ipu.memory.allow_out_of_memory = allow
    system.engine_options = MappingProxyType(engine)
    system.target_options = MappingProxyType(target)
    system.report_directory = engine.get("autoReport.directory")
    return system
