"""Train a convolutional classifier of handwritten digits on four IPUs with PopTorch: the model
in two pipeline stages (one IPU each), replicated twice, with gradient accumulation, written
as Graphcore's PopTorch tutorials write it (poptorch.Options, poptorch.DataLoader over a
torch Dataset, trainingModel, then inferenceModel for the held-out accuracy). The data is
scikit-learn's 8x8 digits.

    ipu-gpu run examples/demo_poptorch.py [--epochs N]
"""

import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm import tqdm

import poptorch

REPLICAS = 2
BATCH_SIZE = 8
GRADIENT_ACCUMULATION = 4  # at least the pipeline's depth: 2 * stages - 1
DEVICE_ITERATIONS = 4
TEST_SIZE = 352
TEST_BATCH_SIZE = 22  # TEST_SIZE / (TEST_BATCH_SIZE * DEVICE_ITERATIONS * REPLICAS) = 2 calls

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=10, help="passes over the training set")
parser.add_argument("--learning-rate", type=float, default=0.002)
args = parser.parse_args()

torch.manual_seed(0)


class DigitsDataset(torch.utils.data.Dataset):
    """(image [1, 8, 8] in [0, 1], label) pairs of one split of the digits."""

    def __init__(self, images, labels):
        self.images = torch.from_numpy(images).unsqueeze(1)
        self.labels = torch.from_numpy(labels)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.images[index], self.labels[index]


class Network(nn.Module):
    """Convolution and pooling on the first IPU, the classifier on the second."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Flatten())
        self.classifier = nn.Sequential(nn.Linear(16 * 4 * 4, 64), nn.ReLU(),
                                        nn.Linear(64, 10))
        self.loss = nn.CrossEntropyLoss()

    def forward(self, images, labels=None):
        with poptorch.Block(ipu_id=0):
            x = self.features(images)
        with poptorch.Block(ipu_id=1):
            logits = self.classifier(x)
            if labels is None:
                return logits
            return logits, self.loss(logits, labels)


digits = load_digits()
x_train, x_test, y_train, y_test = train_test_split(
    (digits.images / 16.0).astype(np.float32), digits.target.astype(np.int64),
    test_size=TEST_SIZE, random_state=0, stratify=digits.target)

# Two replicas of a two-stage pipeline: four IPUs.
training_opts = poptorch.Options()
training_opts.deviceIterations(DEVICE_ITERATIONS)
training_opts.replicationFactor(REPLICAS)
training_opts.Training.gradientAccumulation(GRADIENT_ACCUMULATION)
training_opts.randomSeed(0)

training_data = poptorch.DataLoader(training_opts, DigitsDataset(x_train, y_train),
                                    batch_size=BATCH_SIZE, shuffle=True, drop_last=True)

model = Network()
model.train()
optimizer = poptorch.optim.Adam(model.parameters(), lr=args.learning_rate)
training_model = poptorch.trainingModel(model, training_opts, optimizer=optimizer)

samples, start = 0, None
for epoch in range(1, args.epochs + 1):
    bar = tqdm(training_data, desc=f"epoch {epoch}/{args.epochs}", unit="step")
    for images, labels in bar:
        _, loss = training_model(images, labels)
        if start is None:  # throughput after the first step, which compiles
            start = time.perf_counter()
        else:
            samples += len(labels)
        bar.set_postfix(loss=f"{loss.mean().item():.4f}")
seconds = time.perf_counter() - start
training_model.detachFromDevice()

inference_opts = poptorch.Options()
inference_opts.deviceIterations(DEVICE_ITERATIONS)
inference_opts.replicationFactor(REPLICAS)
test_data = poptorch.DataLoader(inference_opts, DigitsDataset(x_test, y_test),
                                batch_size=TEST_BATCH_SIZE, drop_last=True)
model.eval()
inference_model = poptorch.inferenceModel(model, inference_opts)
correct = 0
for images, labels in test_data:
    correct += int((inference_model(images).argmax(dim=1) == labels).sum())
inference_model.detachFromDevice()

print(f"held-out accuracy: {100 * correct / TEST_SIZE:.2f}% ({TEST_SIZE} digits)")
print(f"throughput: {samples / seconds / REPLICAS:.0f} samples/s per replica, "
      f"{samples / seconds:.0f} samples/s total ({REPLICAS} replicas x 2 pipeline stages = "
      f"{2 * REPLICAS} IPUs)")
