"""MNIST-style CNN training and evaluation written against PopTorch, in the style of
Graphcore's simple_applications/pytorch/mnist: a micro-batch of 8, 50 device iterations per
call, every micro-batch's predictions and loss returned (OutputMode.All), then an inference
model on the trained weights.

Run by tests/test_poptorch_programs.py through `ipu-gpu run`; the test writes the dataset
(`mnist_like.pt`, synthetic 28x28 digits-like images: no download) next to this file and
reads back `trained.pt`."""

import torch
import torch.nn as nn

import poptorch

learning_rate = 0.05
epochs = 1
batch_size = 8
test_batch_size = 80
device_iterations = 50

data = torch.load("mnist_like.pt")
training_dataset = torch.utils.data.TensorDataset(data["train_images"], data["train_labels"])
test_dataset = torch.utils.data.TensorDataset(data["test_images"], data["test_labels"])

# The DataLoader freezes the options it is given: set them all first. randomSeed also seeds
# torch on the host (the weights' initialisation and the shuffling below).
training_opts = poptorch.Options().deviceIterations(device_iterations)
training_opts.outputMode(poptorch.OutputMode.All)
training_opts.randomSeed(0)

training_data = poptorch.DataLoader(training_opts, training_dataset, batch_size=batch_size,
                                    shuffle=True, drop_last=True)
test_data = poptorch.DataLoader(poptorch.Options(), test_dataset, batch_size=test_batch_size,
                                drop_last=True)


class Block(nn.Module):
    """Convolution, max pooling, ReLU."""

    def __init__(self, in_channels, num_filters, kernel_size, pool_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, num_filters, kernel_size=kernel_size)
        self.pool = nn.MaxPool2d(kernel_size=pool_size)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.pool(self.conv(x)))


class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = Block(1, 8, 3, 2)
        self.layer2 = Block(8, 16, 3, 2)
        self.layer3 = nn.Linear(16 * 5 * 5, 64)
        self.layer3_act = nn.ReLU()
        self.layer4 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.layer2(self.layer1(x))
        x = x.flatten(1)
        return self.layer4(self.layer3_act(self.layer3(x)))


class TrainingModelWithLoss(nn.Module):
    """The IPU computes the loss inside the model: return it with the predictions."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.loss = nn.CrossEntropyLoss()

    def forward(self, images, labels=None):
        output = self.model(images)
        if labels is None:
            return output
        return output, self.loss(output, labels)


def accuracy(predictions, labels):
    return (predictions.argmax(dim=1) == labels).float().mean().item()


model = Network()
training_model = poptorch.trainingModel(
    TrainingModelWithLoss(model), training_opts,
    optimizer=torch.optim.SGD(model.parameters(), lr=learning_rate))

print(f"steps per epoch: {len(training_data)}, combined batch: "
      f"{training_data.combinedBatchSize}")
for epoch in range(1, epochs + 1):
    losses_seen, correct = [], 0.0
    for images, labels in training_data:
        preds, losses = training_model(images, labels)
        # OutputMode.All: one row per sample, one loss per micro-batch (device iteration)
        assert preds.shape == (device_iterations * batch_size, 10), preds.shape
        assert losses.shape == (device_iterations,), losses.shape
        losses_seen.append(losses.mean().item())
        correct += accuracy(preds, labels)
    print(f"epoch {epoch}: mean loss {sum(losses_seen) / len(losses_seen):.4f}, "
          f"train accuracy {100 * correct / len(training_data):.2f}%")

training_model.detachFromDevice()

inference_model = poptorch.inferenceModel(model)
total_correct, total = 0, 0
for images, labels in test_data:
    output = inference_model(images)
    total_correct += int((output.argmax(dim=1) == labels).sum())
    total += len(labels)
inference_model.detachFromDevice()

print(f"test accuracy: {total_correct}/{total}")
torch.save(model.state_dict(), "trained.pt")
