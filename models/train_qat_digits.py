#!/usr/bin/env python3
"""Trains the quantization-aware-trained (QAT) digits classifier and exports it:

    models/digits_float.onnx   the float model (BatchNorm folded into the convolutions)
    models/qat_digits.onnx     the same network after quantization-aware training,
                               exported as ONNX QDQ (QuantizeLinear -> DequantizeLinear
                               pairs: per-channel symmetric int8 weights (PyTorch's
                               default range -128..127), per-tensor
                               uint8 activations), as PyTorch writes it

Data: scikit-learn's handwritten digits (8x8, scripts/digits_data.py: the fixed split,
1437 training and 360 held-out images). Network: three 3x3 convolutions (16, 32, 32
channels) with BatchNorm and ReLU, a 2x2 max pool after the second, a linear layer to
10 classes. Float training (Adam, 40 epochs), BatchNorm folded into the convolutions,
then QAT with torch.ao.quantization's eager mode (fake-quant modules: MinMax
observers, moving average; 15 epochs at a tenth of the learning rate, observers and
fake quantization on from the start, observers frozen for the last 3 epochs).

PyTorch is not part of the project's environment (multi-gigabyte; the test command
never needs it): run this once, in a separate venv, and commit the two files:

    python3 -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch==2.5.1 numpy onnx==1.17.0
    .venv/bin/python scripts/fetch_models.py          # the digits data
    /tmp/torchvenv/bin/python models/train_qat_digits.py

Deterministic on one machine (seeded, one thread); the held-out accuracies it prints
are what tests/qat_digits.rs measures again with ONNX Runtime and nnac.
"""
import sys
from pathlib import Path

import numpy as np
import torch
import torch.ao.quantization as tq
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import digits_data  # noqa: E402

torch.manual_seed(20261128)
torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)


class Net(nn.Module):
    def __init__(self, bn=True):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=not bn)
        self.bn1 = nn.BatchNorm2d(16) if bn else nn.Identity()
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, bias=not bn)
        self.bn2 = nn.BatchNorm2d(32) if bn else nn.Identity()
        self.relu2 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv3 = nn.Conv2d(32, 32, 3, padding=1, bias=not bn)
        self.bn3 = nn.BatchNorm2d(32) if bn else nn.Identity()
        self.relu3 = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(32 * 4 * 4, 10)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.relu1(self.bn1(self.conv1(x)))
        x = self.pool(self.relu2(self.bn2(self.conv2(x))))
        x = self.relu3(self.bn3(self.conv3(x)))
        return self.dequant(self.fc(self.flatten(x)))


def folded(net):
    """A BatchNorm-free copy of `net` with every BatchNorm folded into its convolution."""
    out = Net(bn=False)
    out.fc.load_state_dict(net.fc.state_dict())
    for i in (1, 2, 3):
        conv, bn = getattr(net, f"conv{i}"), getattr(net, f"bn{i}")
        s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        dst = getattr(out, f"conv{i}")
        with torch.no_grad():
            dst.weight.copy_(conv.weight * s[:, None, None, None])
            dst.bias.copy_(bn.bias - bn.running_mean * s)
    return out


def train(net, x, y, epochs, lr, on_epoch=None):
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    loss = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(7)
    for e in range(epochs):
        net.train()
        if on_epoch:
            on_epoch(net, e)
        for idx in torch.randperm(len(x), generator=g).split(64):
            opt.zero_grad()
            loss(net(x[idx]), y[idx]).backward()
            opt.step()


def accuracy(net, x, y):
    net.eval()
    with torch.no_grad():
        return float((net(x).argmax(1) == y).float().mean()) * 100


def export(net, path):
    net.eval()
    torch.onnx.export(
        net, torch.zeros(1, 1, 8, 8), str(path), opset_version=13, dynamo=False,
        input_names=["image"], output_names=["logits"], do_constant_folding=True,
    )
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def main():
    tx, ty, hx, hy = (torch.from_numpy(a) for a in digits_data.split())
    net = Net()
    train(net, tx, ty, epochs=40, lr=3e-3)
    base = folded(net)
    print(f"float: held-out accuracy {accuracy(base, hx, hy):.2f}% "
          f"(with BatchNorm {accuracy(net, hx, hy):.2f}%)")
    export(base, ROOT / "models" / "digits_float.onnx")

    qat = folded(net)
    qat.train()
    tq.fuse_modules_qat(qat, [["conv1", "relu1"], ["conv2", "relu2"], ["conv3", "relu3"]],
                        inplace=True)
    act = tq.FakeQuantize.with_args(
        observer=tq.MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
        dtype=torch.quint8, qscheme=torch.per_tensor_affine, reduce_range=False)
    weight = tq.FakeQuantize.with_args(
        observer=tq.MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
        dtype=torch.qint8, qscheme=torch.per_channel_symmetric, ch_axis=0)
    qat.qconfig = tq.QConfig(activation=act, weight=weight)
    tq.prepare_qat(qat, inplace=True)

    def freeze(m, epoch):
        if epoch >= 12:
            m.apply(tq.disable_observer)

    train(qat, tx, ty, epochs=15, lr=3e-4, on_epoch=freeze)
    qat.apply(tq.disable_observer)
    print(f"QAT (fake-quant in PyTorch): held-out accuracy {accuracy(qat, hx, hy):.2f}%")
    export(qat, ROOT / "models" / "qat_digits.onnx")


if __name__ == "__main__":
    main()
