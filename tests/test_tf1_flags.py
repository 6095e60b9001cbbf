"""tf.compat.v1.flags / tf.app.flags and tf.app.run (TF 1.15: absl's flags), against
absl-py itself where it is installed (it comes with the reference TensorFlow)."""

from __future__ import annotations

import sys

import pytest

import ipu_gpu.compat.v1 as v1
from ipu_gpu.compat.v1 import flags as ours

_ARGVS = [
    ["prog", "--n=5", "-s", "hello", "--nob", "pos", "--f", "2.5", "--l=x,y", "--", "--n=7"],
    ["prog", "--n=0x10", "--b=false", "--e=y", "--m=a", "--m", "b", "--mi=3", "--mi=4"],
    ["prog", "-b", "--noc", "--r=given", "tail"],
    ["prog", "--n=abc"], ["prog", "--n=0"], ["prog", "--e=z"], ["prog", "--zz=1"],
    ["prog", "--b=maybe"], ["prog", "--n"], ["prog", "--f=9"], ["prog", "--mi=-1"],
    ["prog", "--le=6"], ["prog", "--c=1", "--en=b"],
]


def _define(mod, fv):
    mod.DEFINE_integer("n", 3, "num", lower_bound=1, flag_values=fv)
    mod.DEFINE_string("s", "a", "str", flag_values=fv)
    mod.DEFINE_boolean("b", True, "bool", flag_values=fv)
    mod.DEFINE_bool("c", False, "bool", flag_values=fv)
    mod.DEFINE_float("f", 0.5, "flt", lower_bound=0, upper_bound=5, flag_values=fv)
    mod.DEFINE_enum("e", "x", ["x", "y"], "enum", flag_values=fv)
    mod.DEFINE_enum("en", "a", ["a", "B"], "enum", case_sensitive=False, flag_values=fv)
    mod.DEFINE_list("l", "a,b", "list", flag_values=fv)
    mod.DEFINE_multi_string("m", ["z"], "multi", flag_values=fv)
    mod.DEFINE_multi_integer("mi", [1], "multi", lower_bound=0, flag_values=fv)
    mod.DEFINE_integer("le", 0, "x", upper_bound=5, flag_values=fv)
    mod.DEFINE_string("r", None, "req", flag_values=fv)


def _outcomes(mod):
    fv = mod.FlagValues()
    _define(mod, fv)
    out = []
    try:
        fv.n  # noqa: B018 - absl refuses a read before parsing
    except Exception as e:  # noqa: BLE001 - compared with absl's
        out.append((type(e).__name__, str(e)))
    for argv in _ARGVS:
        fv.unparse_flags()
        try:
            rest = fv(argv)
            out.append((rest, fv.flag_values_dict()))
        except Exception as e:  # noqa: BLE001 - compared with absl's
            out.append((type(e).__name__, str(e)))
    fv.unparse_flags()
    out.append(fv(["prog", "--zz=1", "--n=4", "rest", "--yy"], known_only=True))
    out.append(fv.n)
    fv.n = 9
    out.append((fv.n, fv["n"].value, fv["n"].default, "n" in fv, "q" in fv))
    for bad in (lambda: setattr(fv, "n", 0), lambda: fv.q,
                lambda: mod.DEFINE_integer("n", 1, "again", flag_values=fv),
                lambda: fv("--n=1")):
        try:
            bad()
            out.append("no error")
        except Exception as e:  # noqa: BLE001 - compared with absl's
            message = str(e).split(" First from")[0]  # the defining modules' names differ
            out.append((type(e).__name__, message))
    mod.mark_flag_as_required("r", flag_values=fv)
    fv.unparse_flags()
    try:
        fv(["prog"])
        out.append("no error")
    except Exception as e:  # noqa: BLE001 - compared with absl's
        out.append((type(e).__name__, str(e)))
    return out


def test_flags_equal_absl():
    absl_flags = pytest.importorskip("absl.flags")
    mine, theirs = _outcomes(ours), _outcomes(absl_flags)
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs):
        assert a == b


def test_tf1_flags_parse_sys_argv_when_first_read(monkeypatch):
    fv = ours.FlagValues(parse_on_access=True)
    ours.DEFINE_integer("batch_size", 32, "batch", flag_values=fv)
    monkeypatch.setattr(sys, "argv", ["train.py", "--batch_size=8"])
    assert fv.batch_size == 8 and fv.is_parsed()
    assert v1.app.flags is v1.flags and isinstance(v1.flags.FLAGS, ours.FlagValues)


def test_app_run_parses_and_exits_with_main(monkeypatch):
    fv = ours.FlagValues(parse_on_access=True)
    ours.DEFINE_integer("steps", 1, "steps", flag_values=fv)
    monkeypatch.setattr(ours, "FLAGS", fv)
    seen = []

    def main(argv):
        seen.append((list(argv), fv.steps))
        return 3
    with pytest.raises(SystemExit) as exit_info:
        v1.app.run(main, argv=["prog", "--steps=7", "--unknown=1", "data"])
    assert exit_info.value.code == 3
    assert seen == [(["prog", "--unknown=1", "data"], 7)]
    monkeypatch.setattr(sys, "argv", ["prog", "--steps=2"])
    fv.unparse_flags()
    with pytest.raises(SystemExit) as exit_info:
        v1.app.run(lambda argv: None)
    assert exit_info.value.code is None and fv.steps == 2
