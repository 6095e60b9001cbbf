"""The per-tensor charge of tensors a program makes (memory.TensorCharges, the engine's
allocation hook): what the ledger reports at every reading equals a plain model that
charges each tensor at birth and releases it at death or at the program's end."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.core import tensor as core_tensor
from ipu_gpu.emulation import engine, system
from ipu_gpu.emulation.memory import (GraphMemoryAllocationError, MemoryLedger, TensorCharges,
                                      add_report_hook, remove_report_hook)
from ipu_gpu.ipu import config, ipu_compiler, scopes


@pytest.fixture
def charging():
    """A ledger whose TensorCharges this thread's new tensors are charged to, as inside a
    replica; yields (ledger, charges)."""
    def start(capacity=1 << 30, allow_out_of_memory=False):
        ledger = MemoryLedger(0, capacity, allow_out_of_memory)
        charges = TensorCharges(ledger)
        engine._LIVE.tensors = charges
        return ledger, charges

    core_tensor.set_allocation_hook(engine._charge_tensor)
    try:
        yield start
    finally:
        core_tensor.set_allocation_hook(None)
        engine._LIVE.tensors = None


def _tensors_row(live: dict):
    """(bytes, count) of the "tensors" label in a plain model (None: no such row)."""
    return (sum(live.values()), len(live)) if live else None


def test_random_births_and_deaths_match_a_plain_model(charging):
    ledger, charges = charging()
    ledger.charge(100, "program inputs")
    g = np.random.default_rng(0)
    tensors, live = {}, {}  # key -> Tensor / its bytes while it lives
    used, peak = 100, 100
    for step in range(400):
        if tensors and g.random() < 0.45:
            key = sorted(tensors)[int(g.integers(len(tensors)))]
            del tensors[key]
            used -= live.pop(key, 0)
        else:
            n = int(g.integers(0, 40))  # 0 elements: a tensor of 0 bytes is not charged
            tensors[step] = core_tensor.wrap(np.zeros(n, np.float32))
            if n:
                live[step] = 4 * n
            used += 4 * n
            peak = max(peak, used)
        assert ledger.used == used
        assert ledger.peak == peak
        rows = {label: (b, c) for label, b, c in ledger.report().by_label}
        assert rows.get("tensors") == _tensors_row(live)
    survivors = list(tensors.values())
    charges.close()  # the program ended: survivors are released at once
    assert ledger.used == 100 and ledger.peak == peak
    assert ledger.report().by_label == (("program inputs", 100, 1),)
    del survivors, tensors  # their deaths after the end release nothing again
    gc.collect()
    assert ledger.used == 100
    assert ledger.report().by_label == (("program inputs", 100, 1),)


def test_deaths_before_a_charge_count_before_its_peak_and_its_fit(charging):
    ledger, _ = charging(capacity=1000)
    a = core_tensor.wrap(np.zeros(200, np.float32))  # 800 bytes
    assert ledger.peak == 800
    heard = []
    add_report_hook(heard.append)
    try:
        with pytest.raises(GraphMemoryAllocationError,
                           match="allocating 400 bytes for 'tensors' needs 1200 bytes"):
            core_tensor.wrap(np.zeros(100, np.float32))  # 800 + 400 > 1000
    finally:
        remove_report_hook(heard.append)
    assert [(r.used, r.requested, r.by_label) for r in heard] == [
        (800, 400, (("tensors", 800, 1),))]
    assert ledger.used == 800
    assert ledger.report().by_label == (("tensors", 800, 1),)
    del a  # freed before the next charge: 400 fits, the peak stays 800
    b = core_tensor.wrap(np.zeros(100, np.float32))
    assert (ledger.used, ledger.peak, ledger.take_window_peak()) == (400, 800, 800)
    assert ledger.free == 600
    del b
    assert ledger.take_window_peak() == 400  # the window since the last take
    assert (ledger.used, ledger.report().by_label) == (0, ())


def test_allow_out_of_memory_charges_past_capacity(charging):
    ledger, _ = charging(capacity=10, allow_out_of_memory=True)
    t = core_tensor.wrap(np.zeros(8, np.float32))
    assert (ledger.used, ledger.peak) == (32, 32)
    del t
    assert ledger.used == 0


def test_a_tensor_dying_in_another_thread_is_released(charging):
    ledger, charges = charging()
    box = [core_tensor.wrap(np.zeros(25, np.float32)) for _ in range(50)]
    assert ledger.used == 5000

    def drop():
        box.clear()  # the deaths happen in this thread

    worker = threading.Thread(target=drop)
    worker.start()
    worker.join()
    assert ledger.used == 0
    assert ledger.report().by_label == ()
    assert charges.refs == {}


def test_threads_charging_their_own_ledgers_while_others_free_theirs(charging):
    """Replicas charge in parallel threads while tensors die in other threads."""
    results = {}

    def replica(r, handoff: list):
        ledger = MemoryLedger(r, 1 << 30)
        engine._LIVE.tensors = charges = TensorCharges(ledger)
        peak = 0
        for i in range(300):
            handoff.append(core_tensor.wrap(np.zeros(i % 7 + 1, np.float32)))
            peak = max(peak, ledger.used)
        charges.close()
        engine._LIVE.tensors = None
        results[r] = (ledger, peak)

    handoffs = [[] for _ in range(3)]
    stop = threading.Event()

    def reaper():  # frees what the replicas made, concurrently
        while not stop.is_set():
            for h in handoffs:
                while len(h) > 5:
                    h.pop(0)

    reap = threading.Thread(target=reaper)
    reap.start()
    threads = [threading.Thread(target=replica, args=(r, handoffs[r])) for r in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    reap.join()
    for ledger, peak in results.values():
        assert ledger.used == 0 and ledger.report().by_label == ()
        assert ledger.peak >= peak
    handoffs.clear()
    gc.collect()
    assert all(ledger.used == 0 for ledger, _ in results.values())


def test_a_tensor_in_a_collected_cycle_is_released_when_collected(charging):
    ledger, _ = charging()
    gc.disable()
    try:
        cycle = [core_tensor.wrap(np.zeros(10, np.float32))]
        cycle.append(cycle)
        del cycle
        assert ledger.used == 40  # garbage, not yet collected
        gc.collect()
    finally:
        gc.enable()
    assert ledger.used == 0


def test_clear_forgets_charges_of_the_earlier_epoch(charging):
    ledger, charges = charging()
    t = core_tensor.wrap(np.zeros(10, np.float32))
    ledger.clear()
    assert ledger.used == 0
    u = core_tensor.wrap(np.zeros(5, np.float32))  # charged again after the clear
    del t
    assert ledger.used == 20  # the old tensor's death releases nothing
    charges.close()
    assert ledger.used == 0 and ledger.report().by_label == ()
    del u


def test_program_peak_and_release_through_the_engine(fresh_ipu_system):
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    kept = []

    def comp():
        a = tf.ones([256, 256])  # 256 KiB
        b = a + 1.0  # 256 KiB more
        del a
        c = b * 2.0  # a died: 512 KiB at most
        kept.append(c)  # outlives the program
        return tf.reduce_sum(c)

    with scopes.ipu_scope("/device:IPU:0"):
        ipu_compiler.compile(comp)
    ledger = system.current_system().device(0).ipus[0].memory
    assert ledger.used == 0  # everything released at the program's end
    block = 256 * 256 * 4
    assert 2 * block <= ledger.peak < 2 * block + 1024  # never a, b and c at once (+ scalars)
    kept.clear()
    assert ledger.used == 0
