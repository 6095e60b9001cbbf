"""IPUInfeedQueue/IPUOutfeedQueue constructor arguments as Graphcore's SDK 3.x checks them
(r2.6/sdk-release-3.4 ipu_infeed_queue.py / ipu_outfeed_queue.py): the default device
ordinal is the current IPUStrategy's, a prefetch_depth of 0 is the default, the infeed
ignores unknown keyword arguments and the outfeed rejects them, with the SDK's messages."""

import warnings

import numpy as np
import pytest

from ipu_gpu.ipu import config as ipu_config
from ipu_gpu.ipu import feed_arguments, ipu_strategy
from ipu_gpu.ipu.ipu_infeed_queue import IPUInfeedQueue
from ipu_gpu.ipu.ipu_outfeed_queue import IPUOutfeedMode, IPUOutfeedQueue


def _data():
    return [(np.full((2,), i, np.float32),) for i in range(4)]


@pytest.mark.parametrize("depth,want", [(None, 3), (0, 3), (1, 1), (255, 255),
                                        (np.int32(7), 7)])
def test_prefetch_depth_none_and_zero_are_the_default(depth, want):
    assert IPUInfeedQueue(_data(), prefetch_depth=depth).prefetch_depth == want


@pytest.mark.parametrize("depth,err,msg", [
    (-1, ValueError, "^prefetch_depth must be greater than zero, but it is -1$"),
    (256, ValueError, "^prefetch_depth must be less than 256, but it is 256$"),
    ("3", TypeError, "Expected int for argument 'prefetch_depth' not '3'"),
    (True, TypeError, "Expected int for argument 'prefetch_depth' not True"),
])
def test_bad_prefetch_depth(depth, err, msg):
    with pytest.raises(err, match=msg):
        IPUInfeedQueue(_data(), prefetch_depth=depth)


def test_infeed_ignores_unknown_keywords_and_warns_for_the_deprecated():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = IPUInfeedQueue(_data(), some_future_option=1, _internal_id="x")
    assert float(q._next_element()[0].numpy()[0]) == 0.0
    with pytest.warns(DeprecationWarning, match="with feed_name is deprecated"):
        IPUInfeedQueue(_data(), feed_name="infeed")


def test_outfeed_rejects_unknown_keywords_and_warns_for_the_deprecated():
    with pytest.raises(TypeError, match=r"__init__\(\) got an unexpected keyword argument "
                                        r"'prefetch_depth'"):
        IPUOutfeedQueue(prefetch_depth=3)
    with pytest.warns(DeprecationWarning, match="with io_batch_size is deprecated"):
        IPUOutfeedQueue(io_batch_size=1)


@pytest.mark.parametrize("ordinal,msg", [(-1, "^Device ordinal must be >= 0$"),
                                         (1.0, "^Device ordinal must be an integer$"),
                                         ("1", "^Device ordinal must be an integer$")])
def test_bad_device_ordinal(ordinal, msg):
    with pytest.raises(ValueError, match=msg):
        IPUInfeedQueue(_data(), device_ordinal=ordinal)
    with pytest.raises(ValueError, match=msg):
        IPUOutfeedQueue(device_ordinal=ordinal)


def test_default_device_ordinal_is_the_strategy_s(fresh_ipu_system):
    assert IPUInfeedQueue(_data()).device_ordinal == 0
    assert IPUOutfeedQueue()._device_ordinal == 0
    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = [1, 1]
    cfg.configure_ipu_system()
    strategy = ipu_strategy.IPUStrategy("/device:IPU:1")
    with strategy.scope():
        assert IPUInfeedQueue(_data()).device_ordinal == 1
        assert IPUOutfeedQueue()._device_ordinal == 1
        assert IPUInfeedQueue(_data(), device_ordinal=0).device_ordinal == 0


def test_outfeed_mode_and_buffer_depth():
    assert IPUOutfeedQueue(outfeed_mode=None).outfeed_mode is IPUOutfeedMode.ALL
    assert IPUOutfeedQueue(IPUOutfeedMode.LAST).outfeed_mode is IPUOutfeedMode.LAST
    with pytest.raises(ValueError, match="but is <class 'int'>"):
        IPUOutfeedQueue(outfeed_mode=1)
    assert feed_arguments.buffer_depth(np.int64(2)) == 2
    with pytest.raises(ValueError, match="^Outfeed buffer depth cannot be less than 1$"):
        IPUOutfeedQueue(buffer_depth=-3)
