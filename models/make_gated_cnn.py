#!/usr/bin/env python3
"""Writes models/gated_cnn.onnx: a small seeded-random network in the style of
current detectors and mobile classifiers, exercising the gates and data movement the
backend lowers to NNA instructions instead of host ops: SiLU written as
`x * Sigmoid(x)` (YOLO / EfficientNet exports), a channel Split into two branches
(C2f / CSP blocks), a squeeze-and-excitation gate (ReduceMean over H and W, two 1x1
convolutions, HardSigmoid, a Mul broadcast over the pixels), a nearest-neighbour
Resize by 2 (FPN), Concat, and a Max of two heads. Input `image` 1x3x48x64, output
`mask` 1x8x48x64 (sigmoid). Opset 18 (Split sizes and ReduceMean axes as inputs),
IR version 8 (ONNX Runtime 1.31 reads it).

Deterministic: the same numpy seed gives a byte-identical file.
Usage: .venv/bin/python models/make_gated_cnn.py [OUT.onnx]
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(20261126)
inits = []
nodes = []


def const(name, arr, dtype=np.float32):
    inits.append(numpy_helper.from_array(np.asarray(arr, dtype=dtype), name))
    return name


def node(op, ins, name, **attrs):
    out = f"{name}_out"
    nodes.append(helper.make_node(op, ins, [out], name=name, **attrs))
    return out


def conv(x, cin, cout, k, stride, name, act="silu"):
    w = rng.normal(0, np.sqrt(2.0 / (cin * k * k)), size=(cout, cin, k, k))
    b = rng.normal(0, 0.05, size=(cout,))
    y = node("Conv", [x, const(f"{name}_w", w), const(f"{name}_b", b)], name,
             kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)
    if act == "silu":
        s = node("Sigmoid", [y], f"{name}/sigmoid")
        y = node("Mul", [y, s], f"{name}/silu")
    elif act == "relu":
        y = node("Relu", [y], f"{name}/relu")
    return y


stem = conv("image", 3, 16, 3, 1, "stem")
down = conv(stem, 16, 32, 3, 2, "down")
nodes.append(helper.make_node("Split", [down, const("split_sizes", [16, 16], np.int64)],
                              ["part_a", "part_b"], name="split", axis=1))
b = conv("part_b", 16, 16, 3, 1, "branch")
cat = node("Concat", ["part_a", b], "csp_cat", axis=1)
fuse = conv(cat, 32, 32, 1, 1, "csp_fuse")
# Squeeze-and-excitation.
pooled = node("ReduceMean", [fuse, const("se_axes", [2, 3], np.int64)], "se_pool", keepdims=1)
s1 = conv(pooled, 32, 8, 1, 1, "se_reduce", act="relu")
s2 = conv(s1, 8, 32, 1, 1, "se_expand", act=None)
gate = node("HardSigmoid", [s2], "se_gate", alpha=0.2, beta=0.5)
se = node("Mul", [fuse, gate], "se_mul")
up = node("Resize", [se, "", const("up_scales", [1, 1, 2, 2])], "upsample", mode="nearest",
          coordinate_transformation_mode="asymmetric", nearest_mode="floor")
merged = node("Concat", [up, stem], "fpn_cat", axis=1)
head_a = conv(merged, 48, 8, 1, 1, "head_a", act=None)
head_b = conv(merged, 48, 8, 3, 1, "head_b", act=None)
best = node("Max", [head_a, head_b], "heads_max")
nodes.append(helper.make_node("Sigmoid", [best], ["mask"], name="mask"))

graph = helper.make_graph(
    nodes, "gated_cnn",
    [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 48, 64])],
    [helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 8, 48, 64])],
    inits,
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                          producer_name="nnac models/make_gated_cnn.py")
model.ir_version = 8
onnx.checker.check_model(model)
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("gated_cnn.onnx")
out.write_bytes(model.SerializeToString())
