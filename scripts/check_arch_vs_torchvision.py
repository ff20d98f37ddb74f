#!/usr/bin/env python3
"""Check scripts/make_arch_models.py's mobile networks against torchvision (issue 24:
"check them once against a torchvision export by hand"). Not part of the test command:
PyTorch stays out of the project's environment, so run it once in a separate venv:

    python3 -m venv /tmp/tv
    /tmp/tv/bin/pip install torch==2.5.1 torchvision==0.20.1 numpy onnx==1.17.0 onnxruntime==1.20.1
    /tmp/tv/bin/python scripts/check_arch_vs_torchvision.py

For each model it loads the ONNX file's weights into torchvision's module of the same
name (Conv2d, BatchNorm2d and Linear parameters in module order, every shape checked),
runs that module in PyTorch and the ONNX file in ONNX Runtime on one seeded frame, and
prints the largest difference and whether the top-1 class agrees. Equal outputs mean
the same architecture: every layer, activation, stride, group and residual.
"""
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torchvision
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parent.parent

def onnx_params(path):
    m = onnx.load(path); g = m.graph
    init = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    out = []
    for n in g.node:
        if n.op_type == "Conv":
            out.append(("conv", [init[i] for i in n.input[1:] if i in init]))
        elif n.op_type == "BatchNormalization":
            out.append(("bn", [init[i] for i in n.input[1:5]]))
        elif n.op_type == "Gemm":
            out.append(("linear", [init[i] for i in n.input[1:] if i in init]))
    return out

def load_into(model, params):
    mods = [m for m in model.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.BatchNorm2d, torch.nn.Linear))]
    assert len(mods) == len(params), (len(mods), len(params))
    for mod, (kind, arrs) in zip(mods, params):
        if isinstance(mod, torch.nn.Conv2d):
            assert kind == "conv" and tuple(mod.weight.shape) == arrs[0].shape, (mod, arrs[0].shape)
            mod.weight.data = torch.from_numpy(arrs[0].copy())
            if len(arrs) > 1:
                assert mod.bias is not None
                mod.bias.data = torch.from_numpy(arrs[1].copy())
            else:
                assert mod.bias is None
        elif isinstance(mod, torch.nn.BatchNorm2d):
            assert kind == "bn" and tuple(mod.weight.shape) == arrs[0].shape
            mod.weight.data, mod.bias.data = torch.from_numpy(arrs[0].copy()), torch.from_numpy(arrs[1].copy())
            mod.running_mean.data, mod.running_var.data = torch.from_numpy(arrs[2].copy()), torch.from_numpy(arrs[3].copy())
        else:
            assert kind == "linear" and tuple(mod.weight.shape) == arrs[0].shape, (mod, arrs[0].shape)
            mod.weight.data = torch.from_numpy(arrs[0].copy()); mod.bias.data = torch.from_numpy(arrs[1].copy())

x = np.random.default_rng(0).normal(0, 1, (1, 3, 224, 224)).astype(np.float32)
for name in ["mobilenet_v2", "efficientnet_b0", "mobilenet_v3_large"]:
    path = str(ROOT / ".cache/models/arch" / f"{name}.onnx")
    model = getattr(torchvision.models, name)(weights=None).eval()
    load_into(model, onnx_params(path))
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    got = ort.InferenceSession(path).run(None, {ort.InferenceSession(path).get_inputs()[0].name: x})[0]
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{name}: torchvision params {n_params}, max |torchvision - ours (ORT)| = {np.abs(want - got).max():.3g}, "
          f"max |out| = {np.abs(want).max():.3g}, same top-1: {want.argmax() == got.argmax()}")
