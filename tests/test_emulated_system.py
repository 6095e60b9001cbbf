"""The emulated IPU system: topology (gc-info listing, selection, shard orders), configuring
from an IPUConfig, executors, the memory ledger, TF_POPLAR_FLAGS and trace events."""

import threading
import time
import types

import pytest

from ipu_gpu.emulation import events, memory, poplar_flags, system, topology
from ipu_gpu.ipu import config as ipu_config


pytestmark = pytest.mark.usefixtures("fresh_ipu_system")


def _configure(**attrs):
    cfg = ipu_config.IPUConfig()
    for name, value in attrs.items():
        obj = cfg
        *path, leaf = name.split("__")
        for part in path:
            obj = getattr(obj, part)
        setattr(obj, leaf, value)
    cfg.configure_ipu_system()
    return system.current_system()


# --- topology ---------------------------------------------------------------------------------

# Excerpts of the documented `gc-info -l` listing (select_ipus docstring).
DOCUMENTED_GROUPS = {
    0: (0,), 8: (8,), 15: (15,),
    16: (5, 7), 17: (4, 6), 18: (3, 1), 19: (2, 0), 20: (13, 15), 21: (12, 14), 22: (9, 11),
    23: (10, 8),
    24: (5, 7, 4, 6), 25: (3, 1, 2, 0), 26: (13, 15, 12, 14), 27: (9, 11, 10, 8),
    28: (5, 7, 4, 6, 3, 1, 2, 0), 29: (13, 15, 12, 14, 9, 11, 10, 8),
    30: (5, 7, 4, 6, 3, 1, 2, 0, 13, 15, 12, 14, 9, 11, 10, 8),
}


def test_listing_is_the_documented_one():
    assert len(topology.LISTING) == 31
    for cid, ipus in DOCUMENTED_GROUPS.items():
        assert topology.LISTING[cid].ipus == ipus
    assert [c.num_ipus for c in topology.LISTING] == [1] * 16 + [2] * 8 + [4] * 4 + [8] * 2 + [16]
    text = topology.gc_info_listing().splitlines()
    assert text[0] == "-+- Id:  [0], type:      [PCIe], PCI Domain: [0000:1a:00.0]"
    assert text[10] == "-+- Id: [10], type:      [PCIe], PCI Domain: [0000:8e:00.0]"
    assert text[16] == "-+- Id: [16], type: [Multi IPU]"
    assert text[17] == "|--- PCIe Id:  [5], DNC Id: [0], PCI Domain: [0000:3e:00.0]"
    assert text[-1] == "|--- PCIe Id:  [8], DNC Id: [15], PCI Domain: [0000:8b:00.0]"
    assert len(text) == 16 + 15 + (8 * 2 + 4 * 4 + 2 * 8 + 16)


@pytest.mark.parametrize("order,n,expected", [
    ("ZIGZAG", 16, list(range(16))),
    ("SNAKE", 16, [0, 1, 3, 2, 4, 5, 7, 6, 8, 9, 11, 10, 12, 13, 15, 14]),
    ("HOOF", 16, [0, 2, 4, 6, 8, 10, 12, 14, 15, 13, 11, 9, 7, 5, 3, 1]),
    ("AUTO", 16, list(range(16))),
    ("SNAKE", 4, [0, 1, 3, 2]),
    ("HOOF", 4, [0, 2, 3, 1]),
    ("HOOF", 8, [0, 2, 4, 6, 7, 5, 3, 1]),
    ("HOOF", 2, [0, 1]),
    ("SNAKE", 2, [0, 1]),
    ("HOOF", 1, [0]),
    ("SNAKE", 8, [0, 1, 3, 2, 4, 5, 7, 6]),
])
def test_shard_order_documented_sequences(order, n, expected):
    assert topology.shard_order(order, n) == expected


def test_shard_order_auto_is_snake_for_pipelines_and_errors():
    assert topology.shard_order("AUTO", 8, pipelined=True) == [0, 1, 3, 2, 4, 5, 7, 6]
    assert topology.shard_order("AUTO", 8, pipelined=False) == list(range(8))
    with pytest.raises(ValueError, match="selection_order"):
        topology.shard_order("RANDOM", 4)
    with pytest.raises(ValueError, match="ZIGZAG"):
        topology.shard_order("SNAKE", 3)  # Poplar's formula would leave the device
    with pytest.raises(ValueError, match="num_ipus"):
        topology.shard_order("ZIGZAG", 0)


def test_auto_select_takes_first_free_group():
    ids = lambda counts: [c.id for c in topology.auto_select(counts)]  # noqa: E731
    assert ids([1]) == [0]
    assert ids([1, 2]) == [0, 16]
    assert ids([1, 1, 1]) == [0, 1, 2]
    assert ids([2, 2]) == [16, 17]
    assert ids([4, 4, 4, 4]) == [24, 25, 26, 27]
    assert ids([8, 8]) == [28, 29]
    assert ids([16]) == [30]
    assert ids([1, 2, 4]) == [0, 16, 26]  # 24 holds IPU 5 (taken), 25 holds IPU 0 (taken)
    assert ids(2) == [16]


@pytest.mark.parametrize("counts,match", [
    ([3], "3 IPUs"), ([32], "32 IPUs"), ([16, 1], "auto_select_ipus"),
    ([2] * 9, "auto_select_ipus"), ([0], "0 IPUs"),
])
def test_auto_select_errors_name_the_attribute(counts, match):
    with pytest.raises(ValueError, match=match) as e:
        topology.auto_select(counts)
    assert "auto_select_ipus" in str(e.value)


def test_select_uses_listing_ids_and_rejects_overlaps():
    assert [c.ipus for c in topology.select([24, 25])] == [(5, 7, 4, 6), (3, 1, 2, 0)]
    assert [c.id for c in topology.select([0, 1, 2, 3])] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="select_ipus"):
        topology.select([31])
    with pytest.raises(ValueError, match="both contain IPU 0"):
        topology.select([0, 19])
    with pytest.raises(ValueError, match="unique"):
        topology.select([1, 1])
    with pytest.raises(TypeError, match="select_ipus"):
        topology.select(["0"])


# --- configuring --------------------------------------------------------------------------------


def test_unconfigured_system_error_names_the_config():
    with pytest.raises(RuntimeError, match="No IPU devices configured.*auto_select_ipus"):
        system.current_system()
    with pytest.raises(RuntimeError, match="No IPU devices configured"):
        ipu_config.get_ipu_config()
    assert not system.is_configured()


def test_default_configuration_is_one_device_one_ipu():
    s = _configure()
    assert [d.name for d in s.devices] == ["/device:IPU:0"]
    assert [ipu.id for ipu in s.devices[0].ipus] == [0]
    assert s.backend == "cpu"


def test_auto_select_devices_and_ipu_properties():
    s = _configure(auto_select_ipus=[1, 2, 4])
    assert [d.name for d in s.devices] == ["/device:IPU:0", "/device:IPU:1", "/device:IPU:2"]
    assert [[i.id for i in d.ipus] for d in s.devices] == [[0], [5, 7], [13, 15, 12, 14]]
    ipu = s.devices[2].ipus[0]
    assert (ipu.version, ipu.tiles, ipu.bytes_per_tile) == ("ipu2", 1472, 624 * 1024)
    assert ipu.memory_bytes == 1472 * 624 * 1024 == ipu.memory.capacity
    assert ipu.pci_domain == "0000:b9:00.0"
    assert s.num_ipus == 7
    assert len(ipu_config.get_ipu_config()) == 3
    assert s.device("/device:IPU:1") is s.devices[1]
    assert s.device("/job:localhost/replica:0/task:0/device:IPU:2") is s.devices[2]


def test_select_ipus_devices():
    s = _configure(select_ipus=[24, 8])
    assert [[i.id for i in d.ipus] for d in s.devices] == [[5, 7, 4, 6], [8]]
    assert s.devices[0].configuration.id == 24


@pytest.mark.parametrize("attrs,match", [
    ({"auto_select_ipus": [8, 16]}, "auto_select_ipus"),
    ({"auto_select_ipus": 5}, "auto_select_ipus"),
    ({"select_ipus": [40]}, "select_ipus"),
    ({"select_ipus": [16, 24]}, "select_ipus"),
    ({"ipu_model__version": "ipu3"}, "ipu_model.version"),
    ({"ipu_model__tiles_per_ipu": -4}, "ipu_model.tiles_per_ipu"),
    ({"io_tiles__num_io_tiles": 1472}, "io_tiles.num_io_tiles"),
])
def test_configure_errors_name_the_attribute(attrs, match):
    with pytest.raises(ValueError, match=match):
        _configure(**attrs)
    assert not system.is_configured()


def test_nonexistent_device_error():
    s = _configure(auto_select_ipus=[1, 1])
    with pytest.raises(ValueError, match=r"/device:IPU:2 does not exist.*auto_select_ipus"):
        s.device(2)
    with pytest.raises(ValueError, match="IPU device name"):
        s.device("/device:CPU:0")


@pytest.mark.parametrize("attrs,version,tiles,per_tile", [
    ({"ipu_model__version": "ipu1"}, "ipu1", 1216, 256 * 1024),
    ({"ipu_model__tiles_per_ipu": 8}, "ipu2", 8, 624 * 1024),
    ({"device_connection__version": "ipu21"}, "ipu21", 1472, 624 * 1024),
    ({"ipu_model__version": "ipu1", "ipu_model__tiles_per_ipu": 4}, "ipu1", 4, 256 * 1024),
])
def test_versions_and_tiles(attrs, version, tiles, per_tile):
    s = _configure(**attrs)
    ipu = s.ipus[0]
    assert (ipu.version, ipu.tiles, ipu.bytes_per_tile) == (version, tiles, per_tile)
    assert ipu.memory.capacity == tiles * per_tile


def test_empty_model_version_warns_and_means_ipu2():
    with pytest.warns(UserWarning, match="ipu_model.version is empty"):
        s = _configure(ipu_model__version="")
    assert s.version == "ipu2" and s.ipus[0].tiles == 1472


def test_reset_from_an_ipu_thread_is_refused():
    s = _configure()
    err = s.ipus[0].executor.submit(lambda: pytest.raises(RuntimeError, system.reset)).result()
    assert "cannot be called from work running on an emulated IPU" in str(err.value)
    assert system.is_configured()


def test_ipu_model_tiles_flag_needs_use_ipu_model(monkeypatch):
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--ipu_model_tiles=16")
    assert _configure().ipus[0].tiles == 1472
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_ipu_model --ipu_model_tiles=16")
    assert _configure().ipus[0].tiles == 16
    assert _configure(ipu_model__tiles_per_ipu=32).ipus[0].tiles == 32  # the config wins
    assert system.running_on_ipu_model()


def test_reset_configuration_false():
    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = 2
    ipu_config.configure_ipu_system(cfg)
    first = system.current_system()
    ipu_config.configure_ipu_system(cfg, reset_configuration=False)
    assert system.current_system() is first
    other = ipu_config.IPUConfig()
    other.auto_select_ipus = 4
    with pytest.raises(RuntimeError, match="can only be set once"):
        ipu_config.configure_ipu_system(other, reset_configuration=False)
    ipu_config.configure_ipu_system(other)
    assert system.current_system().devices[0].num_ipus == 4
    bad = ipu_config.IPUConfig()
    bad.auto_select_ipus = [32]
    with pytest.raises(ValueError, match="auto_select_ipus"):
        ipu_config.configure_ipu_system(bad)
    assert not system.is_configured()  # reset first, as the SDK does


def test_config_is_copied_at_configure_time():
    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = [1]
    cfg.configure_ipu_system()
    cfg.auto_select_ipus = [4]
    assert system.current_system().devices[0].num_ipus == 1
    assert ipu_config.get_ipu_config()[0].auto_select_ipus == [1]


@pytest.mark.parametrize("order,expected", [
    (ipu_config.SelectionOrder.ZIGZAG, [[5, 7, 4, 6], [3, 1, 2, 0]]),
    (ipu_config.SelectionOrder.SNAKE, [[5, 7, 6, 4], [3, 1, 0, 2]]),
    (ipu_config.SelectionOrder.HOOF, [[5, 4, 6, 7], [3, 2, 0, 1]]),
    (ipu_config.SelectionOrder.AUTO, [[5, 7, 4, 6], [3, 1, 2, 0]]),
])
def test_replica_shards_follow_selection_order(order, expected):
    s = _configure(select_ipus=[28], selection_order=order)
    shards = s.devices[0].replica_shards(4)
    assert [[i.id for i in replica] for replica in shards] == expected
    assert [[i.id for i in r] for r in s.devices[0].replica_shards(1)] == \
        [[i] for i in (5, 7, 4, 6, 3, 1, 2, 0)]
    with pytest.raises(ValueError, match="multiple"):
        s.devices[0].replica_shards(3)


def test_cpu_executors_run_on_their_own_threads_and_reset_waits():
    s = _configure(auto_select_ipus=[2])
    a, b = s.devices[0].ipus
    ids = [a.executor.submit(system.current_ipu_id).result(),
           b.executor.submit(system.current_ipu_id).result()]
    assert ids == [5, 7]
    names = {a.executor.submit(lambda: threading.current_thread().name).result(),
             b.executor.submit(lambda: threading.current_thread().name).result()}
    assert len(names) == 2 and threading.current_thread().name not in names
    assert system.current_ipu_id() is None
    done = []
    a.executor.submit(lambda: (time.sleep(0.05), done.append(1)))
    system.reset()
    assert done == [1]


class _FakeCuda:
    """Just enough of cupy.cuda for GpuExecutor: devices and streams as context managers."""

    def __init__(self):
        self.active = threading.local()
        cuda = self

        class Device:
            def __init__(self, i):
                self.i = i

            def __enter__(self):
                cuda.active.device = self.i
                return self

            def __exit__(self, *exc):
                cuda.active.device = None

        class Stream:
            def __init__(self, non_blocking=False):
                self.device = getattr(cuda.active, "device", None)
                self.synced = 0

            def __enter__(self):
                cuda.active.stream = self
                return self

            def __exit__(self, *exc):
                cuda.active.stream = None

            def synchronize(self):
                self.synced += 1

        self.Device, self.Stream = Device, Stream


def test_gpu_executors_spread_ipus_over_gpus(monkeypatch):
    fake = _FakeCuda()
    monkeypatch.setitem(__import__("sys").modules, "cupy", types.SimpleNamespace(cuda=fake))
    monkeypatch.setattr(system, "_gpu_count", lambda: 2)
    s = _configure(auto_select_ipus=[1, 2])
    assert s.backend == "gpu"
    gpus = [ipu.executor.gpu for ipu in s.ipus]
    assert gpus == [0, 1, 0]
    seen = [ipu.executor.submit(lambda: (fake.active.device, fake.active.stream)).result()
            for ipu in s.ipus]
    assert [d for d, _ in seen] == gpus
    streams = [st for _, st in seen]
    assert len({id(st) for st in streams}) == 3  # one stream per emulated IPU
    assert [st.device for st in streams] == gpus
    s.ipus[0].executor.synchronize()
    assert streams[0].synced == 1


# --- memory ----------------------------------------------------------------------------------


def test_ledger_charges_and_releases():
    ledger = memory.MemoryLedger(3, 1000)
    ledger.charge(600, "weights")
    ledger.charge(100, "infeed")
    ledger.charge(50, "infeed")
    assert (ledger.used, ledger.free, ledger.peak) == (750, 250, 750)
    report = ledger.report()
    assert report.by_label == (("weights", 600, 1), ("infeed", 150, 2))
    assert "weights" in str(report)
    ledger.release(100, "infeed")
    ledger.release(600, "weights")
    assert ledger.used == 50
    with pytest.raises(ValueError, match="cannot release"):
        ledger.release(51, "infeed")
    with pytest.raises(ValueError, match="nbytes must be >= 0"):
        ledger.charge(-1)
    with pytest.raises(TypeError, match="nbytes must be an int"):
        ledger.charge(1.5)


def test_over_budget_charge_raises_oom_and_calls_report_hook():
    s = _configure(ipu_model__tiles_per_ipu=2)  # 2 tiles x 624 KiB
    ledger = s.ipus[0].memory
    capacity = 2 * 624 * 1024
    assert ledger.capacity == capacity
    seen = []
    memory.add_report_hook(seen.append)
    try:
        ledger.charge(capacity - 10, "weights")
        with pytest.raises(memory.GraphMemoryAllocationError) as e:
            ledger.charge(11, "activations")
    finally:
        memory.remove_report_hook(seen.append)
    msg = str(e.value)
    assert "Out of memory on IPU 0 (/device:IPU:0)" in msg
    assert "11 bytes for 'activations'" in msg and f"has {capacity} bytes" in msg
    assert "ipu_model.tiles_per_ipu" in msg and "auto_select_ipus" in msg
    assert isinstance(e.value, MemoryError)
    assert seen == [e.value.report]
    assert e.value.report.used == capacity - 10 and e.value.report.requested == 11
    assert ledger.used == capacity - 10  # the failed charge left nothing behind
    with pytest.raises(ValueError, match="was not added"):
        memory.remove_report_hook(seen.append)


def test_allow_out_of_memory_option():
    s = _configure(ipu_model__tiles_per_ipu=1,
                   compilation_poplar_options={"debug.allowOutOfMemory": "true"})
    ledger = s.ipus[0].memory
    ledger.charge(ledger.capacity * 3, "big")
    assert ledger.used == ledger.capacity * 3


def test_ledger_is_thread_safe():
    ledger = memory.MemoryLedger(0, 10**9)

    def work():
        for _ in range(2000):
            ledger.charge(3, "t")
            ledger.release(1 + 2, "t")
            ledger.charge(1, "kept")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ledger.used == 8000
    assert ledger.report().by_label == (("kept", 8000, 8000),)


# --- flags and events -------------------------------------------------------------------------


def test_poplar_flags_parsing():
    f = poplar_flags.parse("--use_ipu_model --synthetic_data_categories='infeed, seed' "
                           "--max_compilation_threads=4")
    assert f.use_ipu_model and not f.use_synthetic_data
    assert f.synthetic_data_categories == {"infeed", "seed"}
    assert poplar_flags.parse("--use_synthetic_data=false").use_synthetic_data is False
    assert poplar_flags.parse("--use_synthetic_data=true").use_synthetic_data is True
    with pytest.raises(ValueError, match="unknown synthetic data category"):
        poplar_flags.parse("--synthetic_data_categories=weights")
    with pytest.raises(ValueError, match="synthetic_data_initializer"):
        poplar_flags.parse("--synthetic_data_initializer=random")
    with pytest.raises(ValueError, match="ipu_model_tiles"):
        poplar_flags.parse("--ipu_model_tiles=many")


def test_poplar_flags_from_the_usage_census_parse():
    f = poplar_flags.parse(
        " --executable_cache_path=./executable_cache --max_compilation_threads=8 "
        "--show_progress_bar=false --null_data_feed --use_ipu_model --ipu_model_tiles=8 "
        "--use_synthetic_data --synthetic_data_initializer=random")
    assert f.executable_cache_path == "./executable_cache"
    assert f.max_compilation_threads == 8 and f.show_progress_bar == "false"
    assert f.null_data_feed and f.use_ipu_model and f.ipu_model_tiles == 8
    assert f.use_synthetic_data and f.synthetic_data_initializer == "random"
    assert f.values["max_infeed_threads"] == -1 and f.values["log_cycle_count"] == -1
    assert f.unknown == ()
    defaults = poplar_flags.parse("")
    assert defaults.show_progress_bar == "auto" and defaults.max_compilation_threads == -1
    assert not defaults.null_data_feed and defaults.executable_cache_path == ""
    for v in ("true", "false", "auto"):
        assert poplar_flags.parse(f"--show_progress_bar={v}").show_progress_bar == v
    for v in ("random", "uniform", "normal", "0", "-3", "2.7"):
        assert poplar_flags.parse(f"--synthetic_data_categories=infeed "
                                  f"--synthetic_data_initializer={v}")


def test_poplar_flags_executable_cache_path_creates_nothing(tmp_path):
    cache = tmp_path / "cache"
    f = poplar_flags.parse(f"--executable_cache_path={cache}")
    assert f.executable_cache_path == str(cache) and not cache.exists()
    assert poplar_flags.parse("--executable_cache_path='/tmp/with space'") \
        .executable_cache_path == "/tmp/with space"


def test_poplar_flags_are_split_as_the_sdk_splits_them():
    f = poplar_flags.parse('--executable_cache_path="a \\" b" --use_synthetic_data=true')
    assert f.executable_cache_path == 'a " b' and f.use_synthetic_data
    assert poplar_flags.parse("--show_progress_bar=true --show_progress_bar=false") \
        .show_progress_bar == "false"  # the last one wins
    assert poplar_flags.parse("  \t ").values == poplar_flags.parse("").values


def test_poplar_flags_unknown_flags_are_accepted_and_listed():
    f = poplar_flags.parse("--use_ipu_model --not_a_flag=3 -x --help")
    assert f.use_ipu_model and f.unknown == ("--not_a_flag", "-x")


@pytest.mark.parametrize("text, match", [
    ("--max_compilation_threads=abc", "--max_compilation_threads must be an integer, got 'abc'"),
    ("--max_compilation_threads=4x", "--max_compilation_threads must be an integer"),
    ("--max_compilation_threads", "--max_compilation_threads must be an integer"),
    ("--ipu_model_tiles=x", "--ipu_model_tiles must be an integer, got 'x'"),
    ("--log_cycle_count=1.5", "--log_cycle_count must be an integer"),
    ("--log_cycle_count=4294967296", "--log_cycle_count must be a 32-bit integer"),
    ("--show_progress_bar=maybe", "--show_progress_bar must be one of 'true', 'false' or "
                                  "'auto', got 'maybe'"),
    ("--use_synthetic_data=maybe", "--use_synthetic_data must be true or false, got 'maybe'"),
    ("--null_data_feed=yes", "--null_data_feed must be true or false"),
    ("--executable_cache_path", "--executable_cache_path needs a value"),
    ("--use_synthetic_data --synthetic_data_initializer=zeros",
     "--synthetic_data_initializer must be random, uniform, normal or a number"),
    ("--use_synthetic_data --synthetic_data_initializer=1e3",
     "--synthetic_data_initializer must be"),
    ("--use_synthetic_data --synthetic_data_initializer=99999999999",
     "--synthetic_data_initializer must be"),
    ("--use_synthetic_data true", "'true' is not a flag"),
    ("--use_ipu_model use_synthetic_data", "'use_synthetic_data' is not a flag"),
])
def test_poplar_flags_malformed_values_are_clear_errors(text, match):
    with pytest.raises(ValueError, match="^TF_POPLAR_FLAGS: ") as e:
        poplar_flags.parse(text)
    assert match in str(e.value)


def test_poplar_flags_from_a_file_as_the_sdk(tmp_path):
    path = tmp_path / "flags.txt"
    path.write_text("--use_synthetic_data\n--max_compilation_threads=2\n")
    f = poplar_flags.parse(str(path))
    assert f.use_synthetic_data and f.max_compilation_threads == 2
    with pytest.raises(ValueError, match="could not open file 'use_synthetic_data' to read "
                                         "flags"):
        poplar_flags.parse("use_synthetic_data")


def test_malformed_poplar_flags_fail_configure(monkeypatch):
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_ipu_model --ipu_model_tiles=lots")
    with pytest.raises(ValueError, match="TF_POPLAR_FLAGS: --ipu_model_tiles must be an "
                                         "integer"):
        _configure()


def test_synthetic_array_follows_the_sdk_initializers():
    import numpy as np

    rng = np.random.default_rng(0)
    z = poplar_flags.synthetic_array("", (2, 3), np.float16)
    assert z.dtype == np.float16 and z.shape == (2, 3) and not z.any()
    for dt in (np.float32, np.float16):
        u = poplar_flags.synthetic_array("uniform", (1000,), dt, rng)
        info = np.finfo(dt)
        assert u.dtype == dt and np.isfinite(u).all()
        assert (u >= info.tiny).all() and (u <= info.max).all()
        n = poplar_flags.synthetic_array("normal", (1000,), dt, rng)
        assert abs(float(n.mean())) < 0.2 and 0.8 < float(n.std()) < 1.2
    for dt in (np.int32, np.uint8, np.int8, np.uint16):
        u = poplar_flags.synthetic_array("random", (4000,), dt, rng)
        info = np.iinfo(dt)
        quarter = (int(info.max) - int(info.min)) // 4  # spread over the whole range
        assert u.dtype == dt and u.min() < info.min + quarter and u.max() > info.max - quarter
        assert (poplar_flags.synthetic_array("normal", (3,), dt) == 1).all()
    b = poplar_flags.synthetic_array("random", (1000,), np.bool_, rng)
    assert b.dtype == np.bool_ and 0 < b.sum() < 1000
    assert poplar_flags.synthetic_array("normal", (2,), np.bool_).all()
    assert (poplar_flags.synthetic_array("2.9", (2,), np.float32) == 2.0).all()
    assert (poplar_flags.synthetic_array("-1", (2,), np.uint8) == 255).all()  # static_cast
    assert (poplar_flags.synthetic_array("300", (2,), np.int8) == 44).all()
    assert not poplar_flags.synthetic_array("0", (2,), np.bool_).any()
    assert np.isinf(poplar_flags.synthetic_array("100000", (2,), np.float16)).all()


def test_events_record_drain_and_serialise():
    events.drain()
    e1 = events.record(events.EventType.COMPILE_BEGIN, 0, module_name="cluster_1")
    e2 = events.record(events.EventType.COMPILE_END, 0, module_name="cluster_1", duration=12)
    assert events.peek() == [e1, e2]
    assert events.drain() == [e1, e2]
    assert events.drain() == []
    back = events.IpuTraceEvent.from_bytes(e2.to_bytes())
    assert back == e2 and back.compile_end.duration == 12
    assert back.compile_end.module_name == b"cluster_1" and back.execute is None
    with pytest.raises(ValueError, match="not a serialised event"):
        events.IpuTraceEvent.from_bytes(b"{}")
    with pytest.raises(TypeError, match="must be an IpuTraceEvent"):
        events.IpuTraceEvent.from_bytes(3)


@pytest.mark.gpu
def test_gpu_executors_on_a_real_gpu():
    from conftest import require_gpu

    cupy = require_gpu()
    import ipu_gpu

    previous = ipu_gpu.backend_name()
    ipu_gpu.set_backend("gpu")
    try:
        s = _configure(auto_select_ipus=[2, 1])
        n_gpus = cupy.cuda.runtime.getDeviceCount()
        assert s.backend == "gpu"
        assert [ipu.executor.gpu for ipu in s.ipus] == [k % n_gpus for k in range(3)]

        def work():
            x = cupy.arange(1000, dtype=cupy.float32)
            return (cupy.cuda.get_current_stream().ptr, cupy.cuda.Device().id,
                    float((x * 2).sum()))

        results = [ipu.executor.submit(work).result() for ipu in s.ipus]
        for ipu, (stream_ptr, dev, total) in zip(s.ipus, results):
            assert stream_ptr == ipu.executor.stream.ptr != 0
            assert dev == ipu.executor.gpu
            assert total == 999000.0
        assert len({r[0] for r in results}) == 3
        for ipu in s.ipus:
            ipu.executor.synchronize()
    finally:
        system.reset()
        ipu_gpu.set_backend(previous)


def test_replica_streams_wait_for_the_host_streams_work(monkeypatch):
    """On a GPU a run records an event on the host thread's stream of every GPU its replicas
    use (the replicas' non-blocking streams then wait for it); a CPU run records none."""
    import sys
    import types

    from ipu_gpu.emulation import engine

    recorded = []

    class Event:
        def __init__(self, **kwargs):
            self.kwargs = kwargs

        def record(self, stream):
            recorded.append((self, stream))

    current = {"device": None}

    class Device:
        def __init__(self, gpu):
            self.gpu = gpu

        def __enter__(self):
            current["device"] = self.gpu

        def __exit__(self, *exc):
            current["device"] = None

    cuda = types.SimpleNamespace(Device=Device, Event=Event,
                                 get_current_stream=lambda: f"host stream on {current['device']}")
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda))
    gpu = [types.SimpleNamespace(executor=types.SimpleNamespace(kind="gpu", gpu=g))
           for g in (0, 1, 0)]
    events = engine._host_work_events([[ipu] for ipu in gpu])
    assert sorted(events) == [0, 1]
    assert sorted(s for _, s in recorded) == ["host stream on 0", "host stream on 1"]
    cpu = [[types.SimpleNamespace(executor=types.SimpleNamespace(kind="cpu"))]]
    assert engine._host_work_events(cpu) == {}
