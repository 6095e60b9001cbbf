"""The emulated IPU machine's hardware: the ``gc-info -l`` device listing, IPU versions and
their tiles and memory, and how shards map onto the IPUs of a multi-IPU device.

The listing is the one Graphcore documents for ``select_ipus`` (a 16-IPU system of eight C2
cards): configurations 0-15 are the single IPUs (PCIe ids 0-15), 16-23 the pairs, 24-27 the
groups of four, 28-29 the groups of eight and 30 all sixteen. A multi-IPU configuration
lists its IPUs in DNC order; ``select_ipus`` indices refer to these ids, and
``auto_select_ipus`` takes, for each requested device, the first configuration of that size
(in listing order) none of whose IPUs an earlier device already holds.

Shard to IPU mapping inside a device (Graphcore's ``poplar_compiler.cc``), for ``n`` IPUs
per replica and shard ``s``:

* ZIGZAG: ``s`` (0, 1, 2, 3, ...);
* SNAKE: ``0, 1, 3, 2, 4, 5, 7, 6, ...`` (consecutive shards are IPU-Link neighbours);
* HOOF: ``0, 2, 4, ..., n-2, n-1, n-3, ..., 1`` (first and last shard on one C2 card);
* AUTO: SNAKE for a pipelined model with default sharding, else ZIGZAG, as Graphcore's
  compiler decides.

Replica ``r`` of a device with ``S`` shards owns the device's IPUs ``[r*S, (r+1)*S)`` in DNC
order (Poplar's replicated graph); the mapping above applies inside that slice.

A smaller system (``IPU_GPU_NUM_IPUS`` = 1, 2, 4 or 8, read once at import: ``ipu-gpu run
--ipus N``) is the documented system's first configuration of that size and every
configuration inside it, with the IPUs renumbered 0..N-1 in PCIe order and the ids
renumbered in listing order, as ``gc-info -l`` lists a smaller machine.

Nothing here imports cupy or starts threads: this is data.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

SIZES = (1, 2, 4, 8, 16)
NUM_IPUS_ENV = "IPU_GPU_NUM_IPUS"

# PCI domain of each PCIe id, as the documented listing shows them.
PCI_DOMAINS = (
    "0000:1a:00.0", "0000:1b:00.0", "0000:23:00.0", "0000:24:00.0",
    "0000:3d:00.0", "0000:3e:00.0", "0000:43:00.0", "0000:44:00.0",
    "0000:8b:00.0", "0000:8c:00.0", "0000:8e:00.0", "0000:8f:00.0",
    "0000:b8:00.0", "0000:b9:00.0", "0000:ba:00.0", "0000:bb:00.0",
)

# IPU-Link pairs of the documented listing (configurations 16-23), in listing order; the
# larger groups concatenate them.
_PAIRS = ((5, 7), (4, 6), (3, 1), (2, 0), (13, 15), (12, 14), (9, 11), (10, 8))

# Graphcore's figures per IPU version (tf_ipu_semantics.md §14): tiles, bytes of
# In-Processor-Memory per tile (ipu1 ~300 MB, ipu2/ipu21 ~900 MB per IPU).
VERSIONS = {
    "ipu1": {"tiles": 1216, "bytes_per_tile": 256 * 1024},
    "ipu2": {"tiles": 1472, "bytes_per_tile": 624 * 1024},
    "ipu21": {"tiles": 1472, "bytes_per_tile": 624 * 1024},
}

SELECTION_ORDERS = ("AUTO", "ZIGZAG", "SNAKE", "HOOF")


@dataclass(frozen=True)
class Configuration:
    """One line of the ``gc-info -l`` listing: an id and the PCIe ids of its IPUs in DNC
    order."""

    id: int
    ipus: tuple

    @property
    def type(self) -> str:
        return "PCIe" if len(self.ipus) == 1 else "Multi IPU"

    @property
    def num_ipus(self) -> int:
        return len(self.ipus)

    def to_dict(self) -> dict:
        return {"id": self.id, "type": self.type, "num_ipus": self.num_ipus,
                "ipus": [{"pcie_id": p, "dnc_id": d, "pci_domain": PCI_DOMAINS[p]}
                         for d, p in enumerate(self.ipus)]}


def system_size() -> int:
    """The emulated system's IPU count: ``IPU_GPU_NUM_IPUS`` (1, 2, 4, 8 or 16), else 16."""
    raw = os.environ.get(NUM_IPUS_ENV, "").strip()
    if not raw:
        return 16
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n not in SIZES:
        raise ValueError(f"{NUM_IPUS_ENV} must be one of {', '.join(map(str, SIZES))} (the "
                         f"IPUs of the emulated system), got {raw!r}")
    return n


def _documented_groups() -> list:
    groups = [(i,) for i in range(16)]
    groups += [tuple(p) for p in _PAIRS]
    for size in (2, 4, 8):  # pairs of pairs, then pairs of those, ...
        prev = [g for g in groups if len(g) == size]
        groups += [prev[i] + prev[i + 1] for i in range(0, len(prev), 2)]
    return groups


def _build_listing(num_ipus: int) -> tuple:
    groups = _documented_groups()
    if num_ipus < 16:
        kept = next(g for g in groups if len(g) == num_ipus)
        renumber = {p: i for i, p in enumerate(sorted(kept))}
        groups = [tuple(renumber[p] for p in g) for g in groups if set(g) <= set(kept)]
    return tuple(Configuration(i, g) for i, g in enumerate(groups))


NUM_IPUS = system_size()
LISTING = _build_listing(NUM_IPUS)
GROUP_SIZES = tuple(sorted({c.num_ipus for c in LISTING}))


def configuration(index: int) -> Configuration:
    """The listing entry with id ``index`` (ValueError naming ``select_ipus`` otherwise)."""
    if isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(f"select_ipus: indices must be integers, got {index!r}")
    if not 0 <= index < len(LISTING):
        raise ValueError(
            f"select_ipus: index {index} is not an IPU configuration of the emulated "
            f"{NUM_IPUS}-IPU system (valid ids 0..{len(LISTING) - 1}, see `ipu-gpu info`); "
            "change IPUConfig.select_ipus")
    return LISTING[index]


def _as_list(value, attr: str) -> list:
    if isinstance(value, bool):
        raise TypeError(f"{attr} must be an int or a list/tuple of ints, got {value!r}")
    if isinstance(value, int):
        return [value]
    if isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{attr} must be an int or a list/tuple of ints, got {value!r}")
        return list(value)
    raise TypeError(f"{attr} must be an int or a list/tuple of ints, got {value!r}")


def select(indices) -> list:
    """The configurations for ``IPUConfig.select_ipus``: one per TF device, disjoint."""
    indices = _as_list(indices, "select_ipus")
    if len(set(indices)) != len(indices):
        raise ValueError(f"select_ipus: all device indices must be unique, got {indices}")
    chosen, held = [], {}
    for index in indices:
        cfg = configuration(index)
        for p in cfg.ipus:
            if p in held:
                raise ValueError(
                    f"select_ipus: configurations {held[p]} and {index} both contain IPU "
                    f"{p}; each IPU can belong to one device only: change "
                    "IPUConfig.select_ipus")
            held[p] = index
        chosen.append(cfg)
    return chosen


def auto_select(counts) -> list:
    """The configurations for ``IPUConfig.auto_select_ipus``: for each device, the first
    listing entry of the requested size whose IPUs are all still free."""
    counts = _as_list(counts, "auto_select_ipus")
    held: set = set()
    chosen = []
    for n in counts:
        if n not in GROUP_SIZES:
            raise ValueError(
                f"auto_select_ipus: could not find an IPU device configuration with {n} "
                f"IPUs; the emulated {NUM_IPUS}-IPU system has configurations of "
                f"{', '.join(map(str, GROUP_SIZES))} IPUs: change IPUConfig.auto_select_ipus")
        for cfg in LISTING:
            if cfg.num_ipus == n and not held.intersection(cfg.ipus):
                held.update(cfg.ipus)
                chosen.append(cfg)
                break
        else:
            raise ValueError(
                f"auto_select_ipus: {counts} asks for {sum(counts)} IPUs in devices of "
                f"{counts} IPUs, but only {NUM_IPUS - len(held)} of the emulated system's "
                f"{NUM_IPUS} IPUs are free in a matching configuration when device "
                f"{len(chosen)} ({n} IPUs) is selected: change IPUConfig.auto_select_ipus")
    return chosen


def shard_order(order: str, num_ipus: int, pipelined: bool = False) -> list:
    """Position (DNC index within the replica's IPUs) of each shard, for a SelectionOrder
    name."""
    if order not in SELECTION_ORDERS:
        raise ValueError(f"selection_order must be one of {SELECTION_ORDERS}, got {order!r}")
    if isinstance(num_ipus, bool) or not isinstance(num_ipus, int) or num_ipus < 1:
        raise ValueError(f"shard_order: num_ipus must be a positive int, got {num_ipus!r}")
    if order == "AUTO":
        order = "SNAKE" if pipelined else "ZIGZAG"
    out = []
    for s in range(num_ipus):
        if order == "SNAKE":
            mod = s % 4
            ipu = s - mod + (mod if mod < 2 else 5 - mod)
        elif order == "HOOF" and num_ipus > 1:
            half = num_ipus // 2
            ipu = 2 * s if s < half else num_ipus - 1 - (s % half) * 2
        else:
            ipu = s
        out.append(ipu)
    if sorted(out) != list(range(num_ipus)):
        # SNAKE needs groups of four and HOOF an even count; Poplar's formulas would name
        # IPUs outside the device otherwise.
        raise ValueError(
            f"selection_order {order} cannot map {num_ipus} shards onto {num_ipus} IPUs; "
            "use SelectionOrder.ZIGZAG (IPUConfig.selection_order) or a device with a "
            "multiple of 4 IPUs")
    return out


def version_info(version: str, tiles_per_ipu: int = 0) -> dict:
    """Tiles, bytes per tile and total memory of one IPU of ``version``; ``tiles_per_ipu``
    > 0 overrides the tile count (``ipu_model.tiles_per_ipu``)."""
    if version not in VERSIONS:
        raise ValueError(
            f"IPU version must be one of {sorted(VERSIONS)}, got {version!r}: change "
            "IPUConfig.ipu_model.version or IPUConfig.device_connection.version")
    base = VERSIONS[version]
    tiles = tiles_per_ipu if tiles_per_ipu > 0 else base["tiles"]
    return {"version": version, "tiles": tiles, "bytes_per_tile": base["bytes_per_tile"],
            "memory_bytes": tiles * base["bytes_per_tile"]}


def _bracket(n: int) -> str:
    return f"[{n}]".rjust(4)


def gc_info_listing() -> str:
    """The listing in the style of ``gc-info -l``."""
    lines = []
    for cfg in LISTING:
        if cfg.num_ipus == 1:
            p = cfg.ipus[0]
            lines.append(f"-+- Id: {_bracket(cfg.id)}, type:      [PCIe], "
                         f"PCI Domain: [{PCI_DOMAINS[p]}]")
        else:
            lines.append(f"-+- Id: {_bracket(cfg.id)}, type: [Multi IPU]")
            for d, p in enumerate(cfg.ipus):
                lines.append(f"|--- PCIe Id: {_bracket(p)}, DNC Id: [{d}], "
                             f"PCI Domain: [{PCI_DOMAINS[p]}]")
    return "\n".join(lines)
