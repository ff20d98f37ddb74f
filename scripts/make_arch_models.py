#!/usr/bin/env python3
"""Build mobile and Inception architectures with onnx.helper and seeded random weights.

PyTorch stays out of the test command, so the architectures that edge deployments use
are written out here node by node, as torchvision / timm export them with
`torch.onnx.export(..., opset_version=13)` in eval mode:

- mobilenet_v2        torchvision MobileNet-v2 (224 x 224): ReLU6 as Clip(0, 6);
- efficientnet_b0     torchvision EfficientNet-B0 (224 x 224): SiLU as x * Sigmoid(x),
                      squeeze-and-excitation as GlobalAveragePool -> Conv -> SiLU -> Conv
                      -> Sigmoid -> Mul(scale, x);
- mobilenet_v3_large  torchvision MobileNet-v3-Large (224 x 224): hard-swish as
                      x * HardSigmoid(x, alpha=1/6) (opset 13 has no HardSwish), SE with
                      ReLU and HardSigmoid, BatchNorm eps 0.001;
- inception_v4        timm Inception-v4 (299 x 299): ConvNormAct (no bias, BatchNorm
                      eps 0.001, ReLU), padding 0 unless given, 3x3 average pools with
                      count_include_pad = 0;
- inception_v4_960x1280  the same network and weights on a 960 x 1280 (H x W) input.

BatchNormalization stays a separate node after every convolution, as an export without
constant folding of batch norm has it (nnac folds it itself). Dropout and stochastic
depth are identities in eval mode and are left out, as the exporter leaves them out.

Weights are drawn from a generator seeded per architecture (both Inception-v4 sizes get
the same weights). Scales follow scripts/make_light_models.py: He-normal convolution
weights, and each BatchNormalization gets a running variance equal to the analytically
propagated second moment of its input (times a random factor in [0.8, 1.25]) and a small
random mean, so activations stay in a sane range without looking at any data; nothing
depends on floating-point summation order, so the files are byte-identical everywhere.

Each model is checked with onnx.checker and run once with ONNX Runtime on the
scikit-image astronaut photo (every intermediate tensor checked finite for inputs of at
most 299 x 299, the outputs only for larger ones); shapes and ranges go to
$ROOT/.cache/models/arch/manifest.json. Writes $ROOT/.cache/models/arch/NAME.onnx.
Idempotent: a model whose stamp (this script's hash, onnx and numpy versions) matches
is skipped, so a second run takes well under a second.

Usage: make_arch_models.py [--force] [NET ...] [--size ARCH:HxW ...]
  --size ARCH:HxW   also build ARCH at another input size, as ARCH_HxW.onnx
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.dont_write_bytecode = True  # no __pycache__ in scripts/ for the shared helper
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_light_models import image_input  # noqa: E402  (one image preprocessing rule)

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / ".cache" / "models" / "arch"
SEED_BASE = 20261127
OPSET = 13
# Inputs with more pixels than this are checked by their outputs only (every
# intermediate tensor of Inception-v4 at 960 x 1280 would take gigabytes).
PROBE_PIXELS = 299 * 299


class ArchModelError(Exception):
    pass


@dataclass(frozen=True)
class Variant:
    """One model file: an architecture at one input size."""
    arch: str
    height: int
    width: int


VARIANTS = {
    "mobilenet_v2": Variant("mobilenet_v2", 224, 224),
    "efficientnet_b0": Variant("efficientnet_b0", 224, 224),
    "mobilenet_v3_large": Variant("mobilenet_v3_large", 224, 224),
    "inception_v4": Variant("inception_v4", 299, 299),
    "inception_v4_960x1280": Variant("inception_v4", 960, 1280),
}


def arch_seed(arch: str) -> int:
    return SEED_BASE ^ zlib.crc32(arch.encode())


def pair(k) -> tuple[int, int]:
    return (k, k) if isinstance(k, int) else (int(k[0]), int(k[1]))


@dataclass
class T:
    """A tensor of the graph being built: its name, channels and second moment."""
    name: str
    c: int
    m: float


class Net:
    """Appends nodes and seeded weights in graph order, tracking second moments."""

    def __init__(self, arch: str, height: int, width: int):
        self.arch = arch
        self.rng = np.random.default_rng(arch_seed(arch))
        self.nodes: list = []
        self.inits: list = []
        self.names: set[str] = set()
        self.height, self.width = height, width
        self.input = T("input", 3, 1.0)

    # -- naming and weights -------------------------------------------------
    def _unique(self, name: str) -> str:
        if name in self.names:
            raise ArchModelError(f"duplicate tensor name {name}")
        self.names.add(name)
        return name

    def _const(self, name: str, value: np.ndarray) -> str:
        name = self._unique(name)
        self.inits.append(helper.make_tensor(name, TensorProto.FLOAT, value.shape,
                                             value.astype(np.float32).tobytes(), raw=True))
        return name

    def _normal(self, shape, std: float) -> np.ndarray:
        return self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std)

    def _uniform(self, shape, lo: float, hi: float) -> np.ndarray:
        u = self.rng.random(shape, dtype=np.float32)
        return u * np.float32(hi - lo) + np.float32(lo)

    def _node(self, op: str, scope: str, inputs: list[str], **attrs) -> str:
        out = self._unique(f"{scope}/{op}_output_0")
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"{scope}/{op}", **attrs))
        return out

    # -- layers -------------------------------------------------------------
    def conv(self, x: T, scope: str, cout: int, k, stride=1, pad=None, groups=1,
             bias=False) -> T:
        kh, kw = pair(k)
        sh, sw = pair(stride)
        ph, pw = pair(pad) if pad is not None else ((kh - 1) // 2, (kw - 1) // 2)
        if x.c % groups or cout % groups:
            raise ArchModelError(f"{scope}: {x.c} -> {cout} channels in {groups} groups")
        fan_in = (x.c // groups) * kh * kw
        w = self._const(f"{scope}.weight", self._normal((cout, x.c // groups, kh, kw),
                                                        (2.0 / fan_in) ** 0.5))
        inputs = [x.name, w]
        m = 2.0 * x.m
        if bias:
            inputs.append(self._const(f"{scope}.bias", self._normal((cout,), 0.02)))
            m += 0.02 ** 2
        y = self._node("Conv", scope, inputs, dilations=[1, 1], group=groups,
                       kernel_shape=[kh, kw], pads=[ph, pw, ph, pw], strides=[sh, sw])
        return T(y, cout, m)

    def bn(self, x: T, scope: str, eps: float) -> T:
        c = x.c
        scale = self._const(f"{scope}.weight", self._uniform((c,), 0.8, 1.2))
        shift = self._const(f"{scope}.bias", self._normal((c,), 0.1))
        mean = self._const(f"{scope}.running_mean", self._normal((c,), 0.1 * x.m ** 0.5))
        var = self._const(f"{scope}.running_var",
                          self._uniform((c,), 0.8, 1.25) * np.float32(x.m))
        y = self._node("BatchNormalization", scope, [x.name, scale, shift, mean, var],
                       epsilon=eps, momentum=0.9)
        return T(y, c, 1.0 + 0.01)

    def relu(self, x: T, scope: str) -> T:
        return T(self._node("Relu", scope, [x.name]), x.c, x.m / 2.0)

    def relu6(self, x: T, scope: str) -> T:
        lo = self._const(f"{scope}.min", np.array(0.0, dtype=np.float32))
        hi = self._const(f"{scope}.max", np.array(6.0, dtype=np.float32))
        return T(self._node("Clip", scope, [x.name, lo, hi]), x.c, x.m / 2.0)

    def sigmoid(self, x: T, scope: str) -> T:
        return T(self._node("Sigmoid", scope, [x.name]), x.c, 0.3)

    def hardsigmoid(self, x: T, scope: str) -> T:
        return T(self._node("HardSigmoid", scope, [x.name], alpha=1.0 / 6.0), x.c, 0.3)

    def mul(self, a: T, b: T, scope: str) -> T:
        return T(self._node("Mul", scope, [a.name, b.name]), max(a.c, b.c), a.m * b.m)

    def silu(self, x: T, scope: str) -> T:
        """torch's SiLU at opset 13: Mul(x, Sigmoid(x))."""
        s = self.sigmoid(x, scope)
        return T(self.mul(x, s, scope).name, x.c, x.m / 2.0)

    def hardswish(self, x: T, scope: str) -> T:
        """torch's Hardswish at opset 13: Mul(x, HardSigmoid(x, alpha = 1/6))."""
        s = self.hardsigmoid(x, scope)
        return T(self.mul(x, s, scope).name, x.c, x.m / 2.0)

    def act(self, kind: str, x: T, scope: str) -> T:
        return {"relu": self.relu, "relu6": self.relu6, "silu": self.silu,
                "hardswish": self.hardswish}[kind](x, scope)

    def add(self, a: T, b: T, scope: str) -> T:
        return T(self._node("Add", scope, [a.name, b.name]), a.c, a.m + b.m)

    def concat(self, parts: list[T], scope: str) -> T:
        y = self._node("Concat", scope, [p.name for p in parts], axis=1)
        return T(y, sum(p.c for p in parts), sum(p.m for p in parts) / len(parts))

    def gap(self, x: T, scope: str) -> T:
        return T(self._node("GlobalAveragePool", scope, [x.name]), x.c, x.m)

    def maxpool(self, x: T, scope: str, k: int, stride: int, pad: int = 0) -> T:
        y = self._node("MaxPool", scope, [x.name], ceil_mode=0, kernel_shape=[k, k],
                       pads=[pad] * 4, strides=[stride, stride])
        return T(y, x.c, x.m)

    def avgpool(self, x: T, scope: str, k: int, stride: int, pad: int) -> T:
        y = self._node("AveragePool", scope, [x.name], ceil_mode=0, count_include_pad=0,
                       kernel_shape=[k, k], pads=[pad] * 4, strides=[stride, stride])
        return T(y, x.c, x.m)

    def flatten(self, x: T, scope: str) -> T:
        return T(self._node("Flatten", scope, [x.name], axis=1), x.c, x.m)

    def linear(self, x: T, scope: str, cout: int) -> T:
        w = self._const(f"{scope}.weight", self._normal((cout, x.c), (2.0 / x.c) ** 0.5))
        b = self._const(f"{scope}.bias", self._normal((cout,), 0.02))
        y = self._node("Gemm", scope, [x.name, w, b], alpha=1.0, beta=1.0, transB=1)
        return T(y, cout, 2.0 * x.m)

    def conv_bn_act(self, x: T, scope: str, cout: int, k, stride=1, pad=None, groups=1,
                    act: str | None = "relu", eps: float = 1e-5) -> T:
        """torchvision Conv2dNormActivation / timm ConvNormAct: scope.0 conv, .1 bn."""
        y = self.conv(x, f"{scope}.0", cout, k, stride, pad, groups)
        y = self.bn(y, f"{scope}.1", eps)
        return self.act(act, y, f"{scope}.2") if act else y

    def squeeze_excite(self, x: T, scope: str, squeeze: int, act: str, gate: str) -> T:
        """torchvision.ops.SqueezeExcitation: scale * input."""
        s = self.gap(x, f"{scope}/avgpool")
        s = self.conv(s, f"{scope}.fc1", squeeze, 1, bias=True)
        s = self.act(act, s, f"{scope}/activation")
        s = self.conv(s, f"{scope}.fc2", x.c, 1, bias=True)
        s = (self.sigmoid if gate == "sigmoid" else self.hardsigmoid)(
            s, f"{scope}/scale_activation")
        return self.mul(s, x, scope)

    def model(self, out: T, doc: str) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, self.arch,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                           [1, 3, self.height, self.width])],
            [helper.make_tensor_value_info(out.name, TensorProto.FLOAT, [1, out.c])],
            self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="nnac scripts/make_arch_models.py",
                                  producer_version="1", doc_string=doc)
        model.ir_version = 7
        onnx.checker.check_model(model)
        return model


def classifier_head(net: Net, x: T, hidden: int | None, act: str | None) -> T:
    x = net.flatten(net.gap(x, "/avgpool"), "/flatten")
    if hidden:
        x = net.linear(x, "/classifier.0", hidden)
        x = net.act(act, x, "/classifier.1")
        return net.linear(x, "/classifier.3", 1000)
    return net.linear(x, "/classifier.1", 1000)


def make_divisible(v: float, divisor: int = 8) -> int:
    """torchvision's _make_divisible (channel counts rounded to multiples of 8)."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def mobilenet_v2(net: Net) -> T:
    x = net.conv_bn_act(net.input, "/features.0", 32, 3, 2, act="relu6")
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]
    i = 1
    for t, c, n, s in settings:
        for j in range(n):
            stride = s if j == 0 else 1
            scope, inp = f"/features.{i}/conv", x
            hidden = inp.c * t
            k = 0
            y = inp
            if t != 1:
                y = net.conv_bn_act(y, f"{scope}.{k}", hidden, 1, act="relu6")
                k += 1
            y = net.conv_bn_act(y, f"{scope}.{k}", hidden, 3, stride, groups=hidden,
                                act="relu6")
            y = net.conv(y, f"{scope}.{k + 1}", c, 1)
            y = net.bn(y, f"{scope}.{k + 2}", 1e-5)
            x = net.add(inp, y, f"/features.{i}") if stride == 1 and inp.c == c else y
            i += 1
    x = net.conv_bn_act(x, f"/features.{i}", 1280, 1, act="relu6")
    return classifier_head(net, x, None, None)


def efficientnet_b0(net: Net) -> T:
    x = net.conv_bn_act(net.input, "/features.0", 32, 3, 2, act="silu")
    # expand ratio, kernel, stride, input channels, output channels, layers
    stages = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2),
              (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
              (6, 3, 1, 192, 320, 1)]
    for si, (e, k, s, cin, cout, n) in enumerate(stages, start=1):
        for j in range(n):
            stride, inp = (s if j == 0 else 1), x
            scope = f"/features.{si}/features.{si}.{j}/block"
            expanded = inp.c * e
            y, b = inp, 0
            if expanded != inp.c:
                y = net.conv_bn_act(y, f"{scope}.{b}", expanded, 1, act="silu")
                b += 1
            y = net.conv_bn_act(y, f"{scope}.{b}", expanded, k, stride, groups=expanded,
                                act="silu")
            y = net.squeeze_excite(y, f"{scope}.{b + 1}", max(1, inp.c // 4), "silu",
                                   "sigmoid")
            y = net.conv_bn_act(y, f"{scope}.{b + 2}", cout, 1, act=None)
            x = net.add(y, inp, f"/features.{si}/features.{si}.{j}") \
                if stride == 1 and inp.c == cout else y
    x = net.conv_bn_act(x, "/features.8", 1280, 1, act="silu")
    return classifier_head(net, x, None, None)


def mobilenet_v3_large(net: Net) -> T:
    eps = 0.001
    x = net.conv_bn_act(net.input, "/features.0", 16, 3, 2, act="hardswish", eps=eps)
    # input, kernel, expanded, output, SE, activation, stride
    blocks = [(16, 3, 16, 16, False, "relu", 1), (16, 3, 64, 24, False, "relu", 2),
              (24, 3, 72, 24, False, "relu", 1), (24, 5, 72, 40, True, "relu", 2),
              (40, 5, 120, 40, True, "relu", 1), (40, 5, 120, 40, True, "relu", 1),
              (40, 3, 240, 80, False, "hardswish", 2), (80, 3, 200, 80, False, "hardswish", 1),
              (80, 3, 184, 80, False, "hardswish", 1), (80, 3, 184, 80, False, "hardswish", 1),
              (80, 3, 480, 112, True, "hardswish", 1), (112, 3, 672, 112, True, "hardswish", 1),
              (112, 5, 672, 160, True, "hardswish", 2), (160, 5, 960, 160, True, "hardswish", 1),
              (160, 5, 960, 160, True, "hardswish", 1)]
    for i, (cin, k, exp, cout, se, act, stride) in enumerate(blocks, start=1):
        if cin != x.c:
            raise ArchModelError(f"block {i}: input {x.c} channels, table says {cin}")
        scope, inp, y, b = f"/features.{i}/block", x, x, 0
        if exp != cin:
            y = net.conv_bn_act(y, f"{scope}.{b}", exp, 1, act=act, eps=eps)
            b += 1
        y = net.conv_bn_act(y, f"{scope}.{b}", exp, k, stride, groups=exp, act=act, eps=eps)
        b += 1
        if se:
            y = net.squeeze_excite(y, f"{scope}.{b}", make_divisible(exp // 4), "relu",
                                   "hardsigmoid")
            b += 1
        y = net.conv_bn_act(y, f"{scope}.{b}", cout, 1, act=None, eps=eps)
        x = net.add(y, inp, f"/features.{i}") if stride == 1 and cin == cout else y
    x = net.conv_bn_act(x, "/features.16", 960, 1, act="hardswish", eps=eps)
    return classifier_head(net, x, 1280, "hardswish")


def inception_v4(net: Net) -> T:
    def cba(x: T, scope: str, cout: int, k, stride=1, pad=0) -> T:
        y = net.conv(x, f"{scope}/conv", cout, k, stride, pad)
        return net.relu(net.bn(y, f"{scope}/bn", 0.001), f"{scope}/bn/act")

    def seq(x: T, scope: str, layers) -> T:
        for n, (cout, k, stride, pad) in enumerate(layers):
            x = cba(x, f"{scope}.{n}", cout, k, stride, pad)
        return x

    def pool_branch(x: T, scope: str, cout: int) -> T:
        p = net.avgpool(x, f"{scope}.0", 3, 1, 1)
        return cba(p, f"{scope}.1", cout, 1)

    f = "/features"
    x = cba(net.input, f"{f}.0", 32, 3, 2)
    x = cba(x, f"{f}.1", 32, 3, 1)
    x = cba(x, f"{f}.2", 64, 3, 1, 1)
    # Mixed3a
    x = net.concat([net.maxpool(x, f"{f}.3/maxpool", 3, 2), cba(x, f"{f}.3/conv", 96, 3, 2)],
                   f"{f}.3")
    # Mixed4a
    b0 = seq(x, f"{f}.4/branch0", [(64, 1, 1, 0), (96, 3, 1, 0)])
    b1 = seq(x, f"{f}.4/branch1", [(64, 1, 1, 0), (64, (1, 7), 1, (0, 3)),
                                   (64, (7, 1), 1, (3, 0)), (96, 3, 1, 0)])
    x = net.concat([b0, b1], f"{f}.4")
    # Mixed5a
    x = net.concat([cba(x, f"{f}.5/conv", 192, 3, 2), net.maxpool(x, f"{f}.5/maxpool", 3, 2)],
                   f"{f}.5")
    i = 6
    for _ in range(4):  # InceptionA
        s = f"{f}.{i}"
        x = net.concat([
            cba(x, f"{s}/branch0", 96, 1),
            seq(x, f"{s}/branch1", [(64, 1, 1, 0), (96, 3, 1, 1)]),
            seq(x, f"{s}/branch2", [(64, 1, 1, 0), (96, 3, 1, 1), (96, 3, 1, 1)]),
            pool_branch(x, f"{s}/branch3", 96)], s)
        i += 1
    s = f"{f}.{i}"  # ReductionA
    x = net.concat([
        cba(x, f"{s}/branch0", 384, 3, 2),
        seq(x, f"{s}/branch1", [(192, 1, 1, 0), (224, 3, 1, 1), (256, 3, 2, 0)]),
        net.maxpool(x, f"{s}/branch2", 3, 2)], s)
    i += 1
    for _ in range(7):  # InceptionB
        s = f"{f}.{i}"
        x = net.concat([
            cba(x, f"{s}/branch0", 384, 1),
            seq(x, f"{s}/branch1", [(192, 1, 1, 0), (224, (1, 7), 1, (0, 3)),
                                    (256, (7, 1), 1, (3, 0))]),
            seq(x, f"{s}/branch2", [(192, 1, 1, 0), (192, (7, 1), 1, (3, 0)),
                                    (224, (1, 7), 1, (0, 3)), (224, (7, 1), 1, (3, 0)),
                                    (256, (1, 7), 1, (0, 3))]),
            pool_branch(x, f"{s}/branch3", 128)], s)
        i += 1
    s = f"{f}.{i}"  # ReductionB
    x = net.concat([
        seq(x, f"{s}/branch0", [(192, 1, 1, 0), (192, 3, 2, 0)]),
        seq(x, f"{s}/branch1", [(256, 1, 1, 0), (256, (1, 7), 1, (0, 3)),
                                (320, (7, 1), 1, (3, 0)), (320, 3, 2, 0)]),
        net.maxpool(x, f"{s}/branch2", 3, 2)], s)
    i += 1
    for _ in range(3):  # InceptionC
        s = f"{f}.{i}"
        b1 = cba(x, f"{s}/branch1_0", 384, 1)
        b2 = seq(x, f"{s}/branch2", [(384, 1, 1, 0), (448, (3, 1), 1, (1, 0)),
                                     (512, (1, 3), 1, (0, 1))])
        x = net.concat([
            cba(x, f"{s}/branch0", 256, 1),
            net.concat([cba(b1, f"{s}/branch1_1a", 256, (1, 3), 1, (0, 1)),
                        cba(b1, f"{s}/branch1_1b", 256, (3, 1), 1, (1, 0))], f"{s}/x1"),
            net.concat([cba(b2, f"{s}/branch2_3a", 256, (1, 3), 1, (0, 1)),
                        cba(b2, f"{s}/branch2_3b", 256, (3, 1), 1, (1, 0))], f"{s}/x2"),
            pool_branch(x, f"{s}/branch3", 256)], s)
        i += 1
    if x.c != 1536:
        raise ArchModelError(f"Inception-v4 features end with {x.c} channels, not 1536")
    x = net.flatten(net.gap(x, "/global_pool"), "/global_pool/flatten")
    return net.linear(x, "/last_linear", 1000)


BUILDERS = {"mobilenet_v2": mobilenet_v2, "efficientnet_b0": efficientnet_b0,
            "mobilenet_v3_large": mobilenet_v3_large, "inception_v4": inception_v4}
SOURCES = {"mobilenet_v2": "torchvision", "efficientnet_b0": "torchvision",
           "mobilenet_v3_large": "torchvision", "inception_v4": "timm"}


def build(v: Variant) -> onnx.ModelProto:
    net = Net(v.arch, v.height, v.width)
    out = BUILDERS[v.arch](net)
    doc = (f"{SOURCES[v.arch]} {v.arch} architecture at {v.height}x{v.width} (opset {OPSET} "
           f"export form) with seeded random weights, seed {arch_seed(v.arch)}; "
           f"not a trained network.")
    return net.model(out, doc)


def run_once(model: onnx.ModelProto, v: Variant) -> dict:
    """Runs the model with ONNX Runtime on a real image; checks every value finite."""
    import onnxruntime as ort
    outs = model.graph.output
    declared = [o.name for o in outs]
    probe_all = v.height * v.width <= PROBE_PIXELS
    if probe_all:
        for node in model.graph.node:
            for name in node.output:
                if name not in declared:
                    outs.append(helper.make_empty_tensor_value_info(name))
    data = model.SerializeToString()
    del outs[len(declared):]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    results = sess.run(None, {inp.name: image_input(inp.shape)})
    if not all(np.isfinite(r).all() for r in results):
        raise ArchModelError("non-finite activations under ONNX Runtime")
    final = {o.name: r for o, r in zip(sess.get_outputs(), results) if o.name in declared}
    return {
        "input": {"name": inp.name, "shape": list(inp.shape)},
        "outputs": [{"name": n, "shape": list(r.shape), "min": float(r.min()),
                     "max": float(r.max())} for n, r in final.items()],
        "max_abs_activation": max(float(np.abs(r).max()) for r in results),
        "activations_checked": "all" if probe_all else "outputs",
    }


def stamp_text() -> str:
    return "\n".join([hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
                      onnx.__version__, np.__version__]) + "\n"


def parse_size(text: str) -> tuple[str, Variant]:
    try:
        arch, size = text.split(":")
        h, w = (int(d) for d in size.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ARCH:HxW, got {text!r}") from None
    if arch not in BUILDERS:
        raise argparse.ArgumentTypeError(f"unknown architecture {arch}; "
                                         f"expected one of {', '.join(BUILDERS)}")
    if not (32 <= h <= 4096 and 32 <= w <= 4096):
        raise argparse.ArgumentTypeError(f"{text}: H and W must be in 32..4096")
    return f"{arch}_{h}x{w}", Variant(arch, h, w)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("nets", nargs="*", metavar="NET",
                        help=f"any of {', '.join(VARIANTS)} (default: all)")
    parser.add_argument("--size", action="append", default=[], type=parse_size,
                        metavar="ARCH:HxW", help="also build ARCH at input size H x W")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    args = parser.parse_args()
    unknown = [n for n in args.nets if n not in VARIANTS]
    if unknown:
        parser.error(f"unknown net {unknown[0]}; expected one of {', '.join(VARIANTS)}")
    todo = {n: VARIANTS[n] for n in (args.nets or ([] if args.size else VARIANTS))}
    todo.update(dict(args.size))
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    stamp = stamp_text()
    manifest_file = OUT_DIR / "manifest.json"
    manifest = json.loads(manifest_file.read_text()) if manifest_file.is_file() else {}
    built = 0
    for name, v in todo.items():
        path, stamp_file = OUT_DIR / f"{name}.onnx", OUT_DIR / f".{name}.stamp"
        if not args.force and path.is_file() and stamp_file.is_file() \
                and stamp_file.read_text() == stamp:
            continue
        t0 = time.monotonic()
        try:
            model = build(v)
            data = model.SerializeToString()
            info = run_once(model, v)
        except (ArchModelError, onnx.checker.ValidationError) as e:
            print(f"make_arch_models: error: {name}: {e}", file=sys.stderr)
            return 1
        tmp = path.with_suffix(".onnx.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
        params = sum(int(np.prod(i.dims)) for i in model.graph.initializer)
        info.update(file=path.name, sha256=hashlib.sha256(data).hexdigest(),
                    parameters=params, seed=arch_seed(v.arch), arch=v.arch,
                    nodes=len(model.graph.node))
        manifest[name] = info
        manifest_file.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
        stamp_file.write_text(stamp)
        built += 1
        out = info["outputs"][0]
        print(f"make_arch_models: {name:<22} {params / 1e6:6.2f} M params, "
              f"{len(model.graph.node)} nodes -> {out['shape']} in [{out['min']:.3g}, "
              f"{out['max']:.3g}]; max |activation| {info['max_abs_activation']:.3g} "
              f"({time.monotonic() - t0:.1f} s)")
    if built == 0:
        print(f"make_arch_models: up to date, {len(todo)} models in {OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
