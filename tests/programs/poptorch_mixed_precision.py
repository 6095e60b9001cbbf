"""Half-precision training written against PopTorch, in the style of Graphcore's
tutorials/pytorch/mixed_precision: the model is cast with `model.half()`, the images are
float16, and the optimizer scales the loss (`loss_scaling`) so that small float16 gradients do
not flush to zero; partials stay float32 (`Precision.setPartialsType`). Then an inference
model on the test images.

Run by tests/test_poptorch_programs.py through `ipu-gpu run`; the test writes `fashion_like.pt`
(float32 images, cast here as the tutorial's transform does) and reads back `trained.pt`."""

import torch
import torch.nn as nn

import poptorch

loss_scaling = 1024.0


class CustomModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 12, 3)
        self.norm = nn.GroupNorm(3, 12)
        self.fc1 = nn.Linear(12 * 5 * 5, 32)
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


stored = torch.load("fashion_like.pt")
train_dataset = torch.utils.data.TensorDataset(stored["train_images"].half(),
                                               stored["train_labels"])
test_dataset = torch.utils.data.TensorDataset(stored["test_images"].half(),
                                              stored["test_labels"])

opts = poptorch.Options()
opts.deviceIterations(4)
opts.randomSeed(0)
opts.Precision.setPartialsType(torch.float)

model = CustomModel()
model = model.half()
optimizer = poptorch.optim.SGD(model.parameters(), lr=0.05, loss_scaling=loss_scaling)

train_dataloader = poptorch.DataLoader(opts, train_dataset, batch_size=12, shuffle=True)

model.train()
poptorch_model = poptorch.trainingModel(model, options=opts, optimizer=optimizer)
total_loss = 0.0
for data, labels in train_dataloader:
    output, loss = poptorch_model(data, labels)
    assert data.dtype == output.dtype == loss.dtype == torch.float16
    total_loss += float(loss)
print(f"mean final loss per call: {total_loss / len(train_dataloader):.4f} "
      f"({loss.dtype}, {len(train_dataloader)} calls)")
poptorch_model.detachFromDevice()

model.eval()
inference_opts = poptorch.Options().deviceIterations(4)
poptorch_model_inf = poptorch.inferenceModel(model, options=inference_opts)
test_dataloader = poptorch.DataLoader(inference_opts, test_dataset, batch_size=25)
correct, total = 0, 0
for data, labels in test_dataloader:
    predictions = poptorch_model_inf(data).float().argmax(dim=1)
    correct += int((predictions == labels).sum())
    total += len(labels)
poptorch_model_inf.detachFromDevice()
print(f"eval accuracy: {correct}/{total}")
torch.save(model.state_dict(), "trained.pt")
