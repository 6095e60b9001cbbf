"""``poptorch.DataLoader``: a ``torch.utils.data.DataLoader`` whose batches are the combined
batch one model call takes, ``batch_size * deviceIterations * replicationFactor *
Training.gradientAccumulation`` (``combinedBatchSize``), with PopTorch's defaults
(``drop_last=True``). ``mode`` Async / AsyncRebatched load in the same process (the numbers
are the same; the background loading is a speed feature)."""

from __future__ import annotations

import torch

from .enums import DataLoaderMode

__all__ = ["AsynchronousDataAccessor", "DataLoader"]


class DataLoader(torch.utils.data.DataLoader):
    """PopTorch's DataLoader (see the module doc).

    Raises:
      ValueError: ``batch_sampler`` with ``batch_size != 1`` or ``shuffle`` (PopTorch
        refuses the combination)."""

    def __init__(self, options, dataset, batch_size=1, shuffle=None, num_workers=0,
                 drop_last=True, persistent_workers=None, auto_distributed_partitioning=True,
                 mode=DataLoaderMode.Sync, async_options=None, rebatched_worker_size=None,
                 batch_sampler=None, **kwargs):
        self.options = options
        self._combine = (int(options.device_iterations) * int(options.replication_factor)
                         * int(options.Training.gradient_accumulation))
        self.batch_size_micro = batch_size
        self.combinedBatchSize = None if batch_size is None else batch_size * self._combine
        self.mode = mode
        if batch_sampler is not None:
            if batch_size != 1 or shuffle:
                raise ValueError("batch_sampler is mutually exclusive with batch_size != 1 "
                                 "and shuffle")
            super().__init__(dataset, batch_sampler=_CombinedSampler(batch_sampler,
                                                                     self._combine),
                             num_workers=num_workers, **kwargs)
            return
        super().__init__(dataset, batch_size=self.combinedBatchSize, shuffle=bool(shuffle),
                         num_workers=num_workers, drop_last=drop_last,
                         persistent_workers=bool(persistent_workers and num_workers > 0),
                         **kwargs)


class _CombinedSampler:
    """A batch sampler's batches concatenated ``combine`` at a time."""

    def __init__(self, sampler, combine):
        self.sampler, self.combine = sampler, combine

    def __iter__(self):
        group = []
        for batch in self.sampler:
            group.append(list(batch))
            if len(group) == self.combine:
                yield [i for b in group for i in b]
                group = []

    def __len__(self):
        return len(self.sampler) // self.combine


class AsynchronousDataAccessor:
    """Iterates a DataLoader (PopTorch loads it ahead in a background process; here in
    order, in this process)."""

    def __init__(self, dataset, buffer_size=3, miss_sleep_time_in_ms=0.1,
                 load_indefinitely=True, early_preload=False, sharing_strategy=None,
                 rebatched_size=None):
        self.dataset = dataset

    def __iter__(self):
        return iter(self.dataset)

    def __len__(self):
        return len(self.dataset)

    def terminate(self):
        pass
