"""Comparing Keras progress output printed by two implementations: the same text, with the
printed numbers allowed to differ by one unit in their last printed digit (two float32 runs
can round a value such as 1.16005 to either side)."""

from __future__ import annotations

import re

_NUMBER = re.compile(r"-?\d+\.\d+(e[-+]\d+)?")


def assert_same_lines(lines_a, lines_b):
    """``lines_a`` equals ``lines_b`` up to one unit in the last digit of each number."""
    assert [_NUMBER.sub("N", line) for line in lines_a] == \
        [_NUMBER.sub("N", line) for line in lines_b]
    for line_a, line_b in zip(lines_a, lines_b):
        for a, b in zip(_NUMBER.finditer(line_a), _NUMBER.finditer(line_b)):
            unit = 10.0 ** -len(b.group().split(".")[1].split("e")[0])
            assert abs(float(a.group()) - float(b.group())) <= unit * 1.01, (line_a, line_b)
