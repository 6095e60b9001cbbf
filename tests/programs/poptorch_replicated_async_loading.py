"""Efficient data loading written against PopTorch, in the style of Graphcore's
tutorials/pytorch/efficient_data_loading: two replicas, 10 device iterations, and a DataLoader
in DataLoaderMode.Async (a background worker prefetches the next combined batches while the
model runs). It measures the loader's throughput alone, then trains two epochs from it.

Run by tests/test_poptorch_programs.py through `ipu-gpu run`; the test writes `features.pt`
next to this file and reads back `trained.pt`."""

import time

import torch
import torch.nn as nn

import poptorch

device_iterations = 10
batch_size = 4
replicas = 2
num_workers = 2
epochs = 2


class ClassificationModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.norm = nn.GroupNorm(2, 8)
        self.fc1 = nn.Linear(8 * 5 * 5, 32)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(32, 10)
        self.log_softmax = nn.LogSoftmax(dim=1)
        self.loss = nn.NLLLoss()

    def forward(self, x, labels=None):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.norm(self.relu(self.conv2(x)))
        x = torch.flatten(x, start_dim=1)
        x = self.log_softmax(self.fc2(self.relu(self.fc1(x))))
        if self.training:
            return x, self.loss(x, labels)
        return x


class catchtime:
    def __enter__(self):
        self.seconds = time.time()
        return self

    def __exit__(self, *exc):
        self.seconds = time.time() - self.seconds


opts = poptorch.Options()
opts.deviceIterations(device_iterations)
opts.replicationFactor(replicas)
opts.randomSeed(0)

stored = torch.load("features.pt")
dataset = torch.utils.data.TensorDataset(stored["features"], stored["labels"])

# The loader alone: how fast can the host produce combined batches?
loader_only = poptorch.DataLoader(opts, dataset=dataset, batch_size=batch_size, shuffle=True,
                                  drop_last=True, num_workers=num_workers,
                                  mode=poptorch.DataLoaderMode.Async,
                                  generator=torch.Generator().manual_seed(1))
steps = len(loader_only)
with catchtime() as t:
    for data, labels in loader_only:
        assert data.shape[0] == labels.shape[0] == device_iterations * batch_size * replicas
print(f"{steps} steps of {loader_only.combinedBatchSize} items, "
      f"DataLoader throughput: {steps * loader_only.combinedBatchSize / t.seconds:.0f} items/s")
loader_only.terminate()

model = ClassificationModel()
model.train()
training_model = poptorch.trainingModel(
    model, opts, poptorch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))

training_data = poptorch.DataLoader(opts, dataset=dataset, batch_size=batch_size,
                                    shuffle=True, drop_last=True, num_workers=num_workers,
                                    mode=poptorch.DataLoaderMode.Async,
                                    async_options={"early_preload": True},
                                    generator=torch.Generator().manual_seed(1))
with catchtime() as t:
    for epoch in range(epochs):
        for data, labels in training_data:
            out, loss = training_model(data, labels)
        # the default output mode of a training model: each replica's last loss
        print(f"epoch {epoch + 1}: losses of the replicas {list(loss.shape)} "
              f"{[round(v, 4) for v in loss.tolist()]}")
print(f"{epochs * steps * training_data.combinedBatchSize / t.seconds:.0f} items/s trained")
training_data.terminate()
training_model.detachFromDevice()
torch.save(model.state_dict(), "trained.pt")
