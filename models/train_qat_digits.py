"""Train a small CNN on scikit-learn's digits with quantization-aware training; export ONNX.

Writes, next to this script:
  qat_digits_float.onnx  the float network after float training (before QAT), opset 13
  qat_digits_qdq.onnx    the same network after QAT (torch.ao.quantization fake-quant:
                         per-channel symmetric int8 weights in -127..127, asymmetric uint8 activations),
                         exported as QuantizeLinear/DequantizeLinear pairs, opset 13

Data: sklearn.datasets.load_digits() (1797 8x8 images shipped inside scikit-learn), used at
8x8, pixel values divided by 16 (range 0..1), input tensor `image` Nx1x8x8, output `logits` Nx10.
Held-out split (deterministic, rebuildable from sklearn without randomness): sample i is a test
sample iff i % 5 == 0 (360 samples); the other 1437 are the training split (also the
calibration set for post-training quantization of the float model).

PyTorch is NOT a project requirement (multi-GB). Run once in a separate venv outside the repo:
  python3 -m venv /work/torchvenv
  /work/torchvenv/bin/pip install torch==2.5.1 scikit-learn numpy onnx
  /work/torchvenv/bin/python models/train_qat_digits.py
Seeded (torch.manual_seed(0), one CPU thread); the committed files are its output.
"""

import os

import numpy as np
import torch
import torch.nn as nn
import torch.ao.quantization as tq
from sklearn.datasets import load_digits

HERE = os.path.dirname(os.path.abspath(__file__))


def split():
    """Return (x_train, y_train, x_test, y_test); test = every 5th sample."""
    d = load_digits()
    x = (d.images.astype(np.float32) / 16.0)[:, None, :, :]
    y = d.target.astype(np.int64)
    test = np.arange(len(y)) % 5 == 0
    return x[~test], y[~test], x[test], y[test]


class Net(nn.Module):
    """conv+bn+relu x2, maxpool 2, conv+bn+relu, linear head."""

    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.relu2 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv3 = nn.Conv2d(32, 32, 3, padding=1, bias=False)
        self.bn3 = nn.BatchNorm2d(32)
        self.relu3 = nn.ReLU()
        self.fc = nn.Linear(32 * 4 * 4, 10)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.relu1(self.bn1(self.conv1(x)))
        x = self.relu2(self.bn2(self.conv2(x)))
        x = self.pool(x)
        x = self.relu3(self.bn3(self.conv3(x)))
        x = torch.flatten(x, 1)
        x = self.fc(x)
        return self.dequant(x)


def train(model, x, y, epochs, lr):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    g = torch.Generator().manual_seed(1)
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(len(yt), generator=g)
        for i in range(0, len(yt), 64):
            idx = perm[i : i + 64]
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return float((model(torch.from_numpy(x)).argmax(1).numpy() == y).mean())


def fold_bn_for_export(model):
    """Make each frozen conv+bn+relu QAT block export as Conv(x, DQ(Q(folded w)), folded b)+Relu.

    torch's training graph exports Conv(x, fq(w*s)) / s followed by a float BatchNormalization,
    so the quantized weights are not the weights that run: a consumer that folds the BN
    re-quantizes them. Here the forward computes the same function with the BN folded
    before the weight fake-quant (the one torch's `convert` would run), so the file's int8
    weights are the weights of the computation.
    """
    for m in model.modules():
        if isinstance(m, nn.intrinsic.qat.ConvBnReLU2d):
            bn = m.bn
            sf = bn.weight / torch.sqrt(bn.running_var + bn.eps)
            w = (m.weight * sf.reshape(-1, 1, 1, 1)).detach()
            lim = (127 * m.weight_fake_quant.scale).reshape(-1, 1, 1, 1)
            w = torch.clamp(w, -lim, lim)
            b = (bn.bias - bn.running_mean * sf).detach()

            def forward(x, m=m, w=w, b=b):
                y = nn.functional.conv2d(x, m.weight_fake_quant(w), b, m.stride, m.padding)
                return nn.functional.relu(y)

            m.forward = forward


def export(model, path):
    model.eval()
    torch.onnx.export(
        model,
        torch.zeros(1, 1, 8, 8),
        path,
        input_names=["image"],
        output_names=["logits"],
        dynamic_axes={"image": {0: "n"}, "logits": {0: "n"}},
        opset_version=13,
        dynamo=False,
    )


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    xtr, ytr, xte, yte = split()
    model = Net()
    train(model, xtr, ytr, epochs=15, lr=1e-2)
    print(f"float test accuracy {accuracy(model, xte, yte):.4f}")
    export(model, os.path.join(HERE, "qat_digits_float.onnx"))

    model.eval()
    fused = tq.fuse_modules_qat(
        model.train(),
        [["conv1", "bn1", "relu1"], ["conv2", "bn2", "relu2"], ["conv3", "bn3", "relu3"]],
    )
    act = tq.FakeQuantize.with_args(
        observer=tq.MovingAverageMinMaxObserver,
        quant_min=0,
        quant_max=255,
        dtype=torch.quint8,
        qscheme=torch.per_tensor_affine,
        reduce_range=False,
    )
    # Weights: per-channel symmetric int8 in the narrow range -127..127 (the NNA's weights
    # are symmetric: a code -128 would be stored as -127, a change ONNX Runtime does not make).
    weight = tq.FakeQuantize.with_args(
        observer=tq.MovingAveragePerChannelMinMaxObserver,
        quant_min=-127,
        quant_max=127,
        dtype=torch.qint8,
        qscheme=torch.per_channel_symmetric,
        ch_axis=0,
    )
    fused.qconfig = tq.QConfig(activation=act, weight=weight)
    qat = tq.prepare_qat(fused)
    train(qat, xtr, ytr, epochs=5, lr=1e-3)
    qat.apply(tq.disable_observer)
    qat.apply(nn.intrinsic.qat.freeze_bn_stats)
    train(qat, xtr, ytr, epochs=2, lr=1e-4)
    print(f"QAT (fake-quant) test accuracy {accuracy(qat, xte, yte):.4f}")
    fold_bn_for_export(qat)
    # torch's ONNX exporter accepts only the int8 range -128..127; the scales (observers
    # disabled) keep every weight code within -127..127, so widening the range is exact.
    # Weights are clamped to +-127 codes first (what training's -127..127 fake-quant did).
    for m in qat.modules():
        fq = getattr(m, "weight_fake_quant", None)
        if isinstance(fq, tq.FakeQuantize):
            fq.quant_min = fq.activation_post_process.quant_min = -128
            if isinstance(m, nn.Linear):
                lim = (127 * fq.scale).reshape(-1, 1)
                with torch.no_grad():
                    m.weight.copy_(torch.clamp(m.weight, -lim, lim))
    print(f"QAT, BN folded for export, test accuracy {accuracy(qat, xte, yte):.4f}")
    export(qat, os.path.join(HERE, "qat_digits_qdq.onnx"))


if __name__ == "__main__":
    main()
