"""``tf.compat.v1.flags`` / ``tf.app.flags`` (TF 1.15: absl's flags behind a FLAGS that
parses ``sys.argv`` the first time a flag is read), written after absl-py's documented
behaviour, which ipu_gpu does not depend on.

``DEFINE_*(name, default, help)`` registers a flag on ``FLAGS`` (or ``flag_values``);
``FLAGS(argv)`` parses ``--name=value``, ``--name value``, ``-name`` forms, booleans as
``--flag``/``--noflag``/``--flag=false``, GNU style (positional arguments may come between
flags; ``--`` ends the flags) and returns ``[argv[0], *positional]``; ``known_only=True``
keeps unknown flags among the returned arguments instead of raising. Values are checked as
absl checks them (integer/float bounds, enum values) with absl's errors and messages.
"""

from __future__ import annotations

import sys

__all__ = ["DEFINE_bool", "DEFINE_boolean", "DEFINE_enum", "DEFINE_float", "DEFINE_integer",
           "DEFINE_list", "DEFINE_multi_float", "DEFINE_multi_integer", "DEFINE_multi_string",
           "DEFINE_string", "DuplicateFlagError", "Error", "FLAGS", "FlagValues",
           "IllegalFlagValueError", "UnparsedFlagAccessError", "UnrecognizedFlagError",
           "ValidationError", "mark_flag_as_required", "mark_flags_as_required"]


class Error(Exception):
    """absl's base flags error."""


class IllegalFlagValueError(Error):
    """A flag's value cannot be parsed or is out of its bounds."""


class UnrecognizedFlagError(Error):
    """A command line names a flag that is not defined."""


class DuplicateFlagError(Error):
    """A flag defined twice."""


class UnparsedFlagAccessError(Error):
    """A flag read before the command line is parsed."""


class ValidationError(Error):
    """A flag validator failed (absl reports it as IllegalFlagValueError)."""


_TRUE = ("true", "t", "1")
_FALSE = ("false", "f", "0")


def _bool(text):
    if isinstance(text, str):
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
    elif isinstance(text, int) and text in (0, 1):
        return bool(text)
    raise ValueError(("Non-boolean argument to boolean flag", text))


def _bounds_help(kind, article, lower, upper) -> str:
    """absl's description of a numeric flag's allowed values."""
    text = f"{article} {kind}"
    if lower is not None and upper is not None:
        return f"{text} in the range [{lower}, {upper}]"
    if lower == 1:
        return f"a positive {kind}"
    if upper == -1:
        return f"a negative {kind}"
    if lower == 0:
        return f"a non-negative {kind}"
    if upper == 0:
        return f"a non-positive {kind}"
    if upper is not None:
        return f"{kind} <= {upper}"
    if lower is not None:
        return f"{kind} >= {lower}"
    return text


class _Flag:
    """One flag: its parser (text -> value), default, current value and checks."""

    def __init__(self, name, default, help_text, parse, boolean=False, multi=False,
                 check=None, module=None):
        self.name, self.help, self.boolean, self.multi = name, help_text, boolean, multi
        self._parse, self._check, self.module = parse, check, module
        self.present = 0
        self.required = False
        self.default = None if default is None else self.convert(default)
        self.value = self.default

    def convert(self, text):
        """The value of ``text`` (a list for a multi flag), checked."""
        try:
            if self.multi:
                items = text if isinstance(text, (list, tuple)) else [text]
                value = [self._parse(t) for t in items]
            else:
                value = self._parse(text)
        except (ValueError, TypeError) as e:
            reason = e.args[0] if len(e.args) == 1 else e.args
            raise IllegalFlagValueError(f"flag --{self.name}={text}: {reason}") from None
        self.check(value, text)
        return value

    def check(self, value, text=None) -> None:
        for v in (value if self.multi and isinstance(value, list) else [value]):
            problem = self._check(v) if self._check is not None and v is not None else None
            if problem:
                shown = text if text is not None else v
                raise IllegalFlagValueError(f"flag --{self.name}={shown}: {problem}")


def _calling_module(depth: int = 2) -> str:
    """The module defining a flag (absl's message names it): the caller of the DEFINE_*
    function ``depth - 1`` frames up, the program's path for ``__main__``."""
    frame = sys._getframe(depth)
    name = frame.f_globals.get("__name__", "")
    return sys.argv[0] if name == "__main__" and sys.argv else name


class FlagValues:
    """absl's ``FlagValues``: the defined flags, their values and the command-line parser."""

    def __init__(self, parse_on_access: bool = False):
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_parsed", False)
        object.__setattr__(self, "_parse_on_access", parse_on_access)

    # ---- definitions ----------------------------------------------------------------------
    def _define(self, flag: _Flag) -> None:
        old = self._flags.get(flag.name)
        if old is not None:
            raise DuplicateFlagError(
                f"The flag '{flag.name}' is defined twice. First from {old.module}, second "
                f"from {flag.module}. Description from first occurrence: {old.help}")
        self._flags[flag.name] = flag

    # ---- reading and setting ----------------------------------------------------------------
    def __getattr__(self, name):
        flags = object.__getattribute__(self, "_flags")
        if name not in flags:
            raise AttributeError(name)
        if not self._parsed:
            if self._parse_on_access:  # TF 1.15's FLAGS parses sys.argv when first read
                self(sys.argv)
            else:
                raise UnparsedFlagAccessError(f"Trying to access flag --{name} before flags "
                                              "were parsed.")
        return flags[name].value

    def __setattr__(self, name, value):
        flag = self._flags.get(name)
        if flag is None:
            raise AttributeError(name)
        flag.check(value)
        flag.value = value
        flag.present += 1

    def __getitem__(self, name) -> _Flag:
        return self._flags[name]

    def __contains__(self, name) -> bool:
        return name in self._flags

    def __iter__(self):
        return iter(self._flags)

    def __len__(self) -> int:
        return len(self._flags)

    def is_parsed(self) -> bool:
        return self._parsed

    def mark_as_parsed(self) -> None:
        object.__setattr__(self, "_parsed", True)

    def unparse_flags(self) -> None:
        """Every flag back to its default, the command line unparsed."""
        for flag in self._flags.values():
            flag.value, flag.present = flag.default, 0
        object.__setattr__(self, "_parsed", False)

    def flag_values_dict(self) -> dict:
        return {name: flag.value for name, flag in self._flags.items()}

    def get_flag_value(self, name, default):
        flag = self._flags.get(name)
        return default if flag is None else flag.value

    # ---- parsing ----------------------------------------------------------------------------
    def __call__(self, argv, known_only: bool = False) -> list:
        """Parses the flags of ``argv`` (``argv[0]`` is the program) and returns
        ``[argv[0], *the other arguments]``.

        Raises:
          TypeError: ``argv`` is a string; UnrecognizedFlagError: an undefined flag (unless
          ``known_only``); IllegalFlagValueError: a value absl refuses, a required flag
          left None; Error: a flag without its value."""
        if isinstance(argv, str):
            raise TypeError("argv should be a tuple/list of strings, not bytes or string.")
        if not argv:
            raise ValueError("argv cannot be an empty list, and must contain the program name "
                             "as the first element.")
        rest, args, i = [argv[0]], list(argv[1:]), 0
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                rest.extend(args[i:])
                break
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                continue
            body = arg[2:] if arg.startswith("--") else arg[1:]
            name, eq, text = body.partition("=")
            flag = self._flags.get(name)
            if flag is None and name.startswith("no") and not eq:
                negated = self._flags.get(name[2:])
                if negated is not None and negated.boolean:
                    self._assign(negated, "false")
                    continue
            if flag is None:
                if known_only:
                    rest.append(arg)
                    continue
                raise UnrecognizedFlagError(f"Unknown command line flag '{name}'")
            if not eq:
                if flag.boolean:
                    text = "true"
                elif i < len(args):
                    text, i = args[i], i + 1
                else:
                    raise Error(f"Missing value for flag {arg}")
            self._assign(flag, text)
        self.mark_as_parsed()
        for flag in self._flags.values():
            if flag.required and flag.value is None:
                raise IllegalFlagValueError(f"flag --{flag.name}={flag.value}: Flag "
                                            f"--{flag.name} must have a value other than "
                                            "None.")
        return rest

    @staticmethod
    def _assign(flag: _Flag, text) -> None:
        value = flag.convert(text)
        if flag.multi and flag.present:
            flag.value = flag.value + value
        else:
            flag.value = value
        flag.present += 1


FLAGS = FlagValues(parse_on_access=True)


# ---- definitions ------------------------------------------------------------------------------
def _numeric(kind, article, cast, lower, upper):
    allowed = _bounds_help(kind, article, lower, upper)

    def check(v):
        if (lower is not None and v < lower) or (upper is not None and v > upper):
            return f"{v} is not {allowed}"
        return None

    def parse(text):
        if isinstance(text, str) and cast is int:
            base = 10  # absl's: 0x... hexadecimal, 0o... octal
            if len(text) > 2 and text[0] == "0" and text[1] in "ox":
                base = 8 if text[1] == "o" else 16
            return int(text, base)
        return cast(text)
    return parse, check


def _add(flag_values, flag):
    (FLAGS if flag_values is None else flag_values)._define(flag)
    return flag


def DEFINE_string(name, default, help, flag_values=None, **kwargs):  # noqa: A002,N802
    """A flag whose value is a string."""
    return _add(flag_values, _Flag(name, default, help, str, module=_calling_module()))


def DEFINE_integer(name, default, help, lower_bound=None, upper_bound=None,  # noqa: A002,N802
                   flag_values=None, **kwargs):
    """A flag whose value is an int within [``lower_bound``, ``upper_bound``]."""
    parse, check = _numeric("integer", "an", int, lower_bound, upper_bound)
    return _add(flag_values, _Flag(name, default, help, parse, check=check,
                                   module=_calling_module()))


def DEFINE_float(name, default, help, lower_bound=None, upper_bound=None,  # noqa: A002,N802
                 flag_values=None, **kwargs):
    """A flag whose value is a float within [``lower_bound``, ``upper_bound``]."""
    parse, check = _numeric("number", "a", float, lower_bound, upper_bound)
    return _add(flag_values, _Flag(name, default, help, parse, check=check,
                                   module=_calling_module()))


def DEFINE_boolean(name, default, help, flag_values=None, **kwargs):  # noqa: A002,N802
    """A boolean flag: ``--name``, ``--noname`` or ``--name=true|false|t|f|1|0``."""
    return _add(flag_values, _Flag(name, default, help, _bool, boolean=True,
                                   module=_calling_module()))


DEFINE_bool = DEFINE_boolean


def DEFINE_enum(name, default, enum_values, help, flag_values=None,  # noqa: A002,N802
                case_sensitive=True, **kwargs):
    """A string flag whose value is one of ``enum_values``."""
    values = list(enum_values)
    if not values:
        raise ValueError(f"enum_values cannot be empty, found \"{enum_values}\"")

    def parse(text):
        if case_sensitive:
            if text not in values:
                raise ValueError(f"value should be one of <{'|'.join(values)}>")
            return text
        match = [v for v in values if v.upper() == str(text).upper()]
        if not match:
            raise ValueError(f"value should be one of <{'|'.join(values)}>")
        return match[0]
    return _add(flag_values, _Flag(name, default, help, parse, module=_calling_module()))


def DEFINE_list(name, default, help, flag_values=None, **kwargs):  # noqa: A002,N802
    """A flag whose value is a list of strings (given comma-separated)."""
    def parse(text):
        if isinstance(text, (list, tuple)):
            return [str(t) for t in text]
        return [t.strip() for t in text.split(",")] if text else []
    return _add(flag_values, _Flag(name, default, help, parse, module=_calling_module()))


def _define_multi(name, default, help_text, parse, check, flag_values):
    return _add(flag_values, _Flag(name, default, help_text, parse, multi=True, check=check,
                                   module=_calling_module(3)))


def DEFINE_multi_string(name, default, help, flag_values=None, **kwargs):  # noqa: A002,N802
    """A flag given any number of times; its value is the list of the strings."""
    return _define_multi(name, default, help, str, None, flag_values)


def DEFINE_multi_integer(name, default, help, lower_bound=None,  # noqa: A002,N802
                         upper_bound=None, flag_values=None, **kwargs):
    """A flag given any number of times; its value is the list of the ints."""
    parse, check = _numeric("integer", "an", int, lower_bound, upper_bound)
    return _define_multi(name, default, help, parse, check, flag_values)


def DEFINE_multi_float(name, default, help, lower_bound=None,  # noqa: A002,N802
                       upper_bound=None, flag_values=None, **kwargs):
    """A flag given any number of times; its value is the list of the floats."""
    parse, check = _numeric("number", "a", float, lower_bound, upper_bound)
    return _define_multi(name, default, help, parse, check, flag_values)


def mark_flag_as_required(flag_name, flag_values=None) -> None:
    """Parsing fails (IllegalFlagValueError) when ``flag_name`` is still None afterwards."""
    (FLAGS if flag_values is None else flag_values)[flag_name].required = True


def mark_flags_as_required(flag_names, flag_values=None) -> None:
    for name in flag_names:
        mark_flag_as_required(name, flag_values)
