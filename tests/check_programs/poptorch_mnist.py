# A PopTorch program in the style of Graphcore's tutorials/pytorch/basics.
import poptorch
import torch
import torchvision
from poptorch import optim


class ClassificationModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(784, 10)
        self.loss = torch.nn.CrossEntropyLoss()

    def forward(self, x, labels=None):
        out = self.fc(x.flatten(1))
        if self.training:
            return out, self.loss(out, labels)
        return out


opts = poptorch.Options()
opts.deviceIterations(20)
dataset = torchvision.datasets.FashionMNIST("~/.torch/datasets", download=True)
loader = poptorch.DataLoader(opts, dataset, batch_size=16, shuffle=True,
                             mode=poptorch.DataLoaderMode.Async)
model = ClassificationModel()
optimizer = optim.SGD(model.parameters(), lr=0.001)
poptorch_model = poptorch.trainingModel(model, options=opts, optimizer=optimizer)
for data, labels in loader:
    output, loss = poptorch_model(data, labels)
poptorch_model.detachFromDevice()
poptorch.not_a_poptorch_function()  # a typo: never provided
