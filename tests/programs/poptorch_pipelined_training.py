"""Pipelined model parallelism written against PopTorch, in the style of Graphcore's
tutorials/pytorch/pipelining: a CNN split into four `poptorch.Block`s, one `poptorch.Stage`
per IPU (4 IPUs) under `poptorch.PipelinedExecution`, gradient accumulation at least the
pipeline's depth (2 * 4 - 1 stages when training), then an inference model pipelined over the
same four IPUs (device iterations at least its 4 stages) on the test images.

Run by tests/test_poptorch_programs.py through `ipu-gpu run`; the test writes the dataset
(`digits_like.pt`, synthetic 16x16 digits-like images: no download) next to this file and
reads back `trained.pt`."""

import torch
import torch.nn as nn

import poptorch

micro_batch_size = 4
gradient_accumulation = 8
device_iterations = 5
epochs = 2
learning_rate = 0.03

data = torch.load("digits_like.pt")
train_set = torch.utils.data.TensorDataset(data["train_images"], data["train_labels"])
test_set = torch.utils.data.TensorDataset(data["test_images"], data["test_labels"])


class PipelinedNet(nn.Module):
    """conv | conv | dense | classifier + loss: one Block each."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc1 = nn.Linear(16 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)
        self.pool = nn.MaxPool2d(2)
        self.relu = nn.ReLU()
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x, labels=None):
        with poptorch.Block("conv1"):
            x = self.pool(self.relu(self.conv1(x)))
        with poptorch.Block("conv2"):
            x = self.pool(self.relu(self.conv2(x)))
        with poptorch.Block("dense"):
            x = self.relu(self.fc1(x.flatten(1)))
        with poptorch.Block("classifier"):
            logits = self.fc2(x)
            if labels is None:
                return logits
            return logits, self.loss(logits, labels)


def pipeline_over_four_ipus():
    return poptorch.PipelinedExecution(
        poptorch.Stage("conv1").ipu(0), poptorch.Stage("conv2").ipu(1),
        poptorch.Stage("dense").ipu(2), poptorch.Stage("classifier").ipu(3))


train_opts = poptorch.Options()
train_opts.deviceIterations(device_iterations)
train_opts.Training.gradientAccumulation(gradient_accumulation)
train_opts.setExecutionStrategy(pipeline_over_four_ipus())
train_opts.randomSeed(0)  # seeds the weights' initialisation and the shuffling below

train_loader = poptorch.DataLoader(train_opts, train_set, batch_size=micro_batch_size,
                                   shuffle=True)

model = PipelinedNet()
model.train()
optimizer = poptorch.optim.SGD(model.parameters(), lr=learning_rate, momentum=0.9)
training_model = poptorch.trainingModel(model, train_opts, optimizer=optimizer)

print(f"{len(train_loader)} calls per epoch, combined batch {train_loader.combinedBatchSize}")
for epoch in range(epochs):
    total = 0.0
    for images, labels in train_loader:
        _, loss = training_model(images, labels)
        total += float(loss)
    print(f"epoch {epoch}: last loss of each call, mean {total / len(train_loader):.4f}")
training_model.detachFromDevice()

test_opts = poptorch.Options().deviceIterations(4)
test_opts.setExecutionStrategy(pipeline_over_four_ipus())
test_loader = poptorch.DataLoader(test_opts, test_set, batch_size=20)
model.eval()
inference_model = poptorch.inferenceModel(model, test_opts)
correct = seen = 0
for images, labels in test_loader:
    predictions = inference_model(images).argmax(dim=1)
    correct += int((predictions == labels).sum())
    seen += len(labels)
inference_model.detachFromDevice()
print(f"test accuracy: {correct}/{seen}")
torch.save(model.state_dict(), "trained.pt")
