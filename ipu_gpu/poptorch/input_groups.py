"""``Options.inputReplicaGrouping``: which rows of a call's host batch each replica reads
(research/poptorch_semantics.md section 2.1).

With ``G = input_group_size`` the host batch holds ``S * (R / G) * A`` micro-batches and the
replicas of one group read the same ones. PopTorch's ``StepIO`` (popart_compiler
``CompilerImpl.cpp``, ``StepIO::get``) hands out micro-batches as PopART asks for them,
iteration by iteration (device iteration, then accumulation step) and replica by replica
within one: it reads a tensor's buffer sequentially within one of ``R / G`` equal contiguous
regions, and when a region's end is reached it moves to the region of the next replica in
turn, region ``k // G`` for the k-th switch (``CommGroupType.Consecutive``) or
``k % (R / G)`` (``Orthogonal``). With ``G = 1`` this is the plain sequential ``[S, A, R, B]``
layout; with ``S * A = 1`` replica r reads region ``r // G`` (``r % (R / G)``). The emulator
replays that sequence (``micro_batch_starts``), so other cases come out as PopTorch's code
gives them.
"""

from __future__ import annotations

__all__ = ["group_size", "host_micro_batches", "micro_batch_starts"]


def group_size(options) -> int:
    """``Options.inputReplicaGrouping``'s group size (1 when not set)."""
    return int(options._values.get("input_group_size", 1))


def host_micro_batches(options, s: int, r: int, a: int) -> int:
    """Micro-batches in one call's host batch: ``S * (R / G) * A``."""
    return s * (r // group_size(options)) * a


def micro_batch_starts(s: int, a: int, r: int, g: int, orthogonal: bool) -> list:
    """``starts[si][ai][ri]``: the index (in micro-batches) of the host micro-batch replica
    ``ri`` reads at device iteration ``si``, accumulation step ``ai``, for ``S = s``,
    ``A = a``, ``R = r`` replicas in input groups of ``g`` (``orthogonal``:
    ``CommGroupType.Orthogonal``, else ``Consecutive``)."""
    groups = r // g
    total = s * a * groups  # micro-batches in the host batch
    per_region = total // groups
    offset = end = 0  # in micro-batches, as StepIO's byte offsets
    switches = 0  # StepIO's replica_idx: which replica's region comes next
    starts = [[[0] * r for _ in range(a)] for _ in range(s)]
    for si in range(s):
        for ai in range(a):
            for ri in range(r):
                if offset == end:
                    region = switches % groups if orthogonal else switches // g
                    offset = region * per_region
                    end = ((region + 1) * per_region) % total
                    switches = (switches + 1) % r
                starts[si][ai][ri] = offset
                offset = (offset + 1) % total
    return starts
