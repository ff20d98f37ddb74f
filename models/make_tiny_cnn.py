#!/usr/bin/env python3
"""Writes models/tiny_cnn.onnx: a small seeded-random CNN that exercises every
compound operation the backend lowers today (conv + BN + ReLU + 2x2 max pool fused,
a residual Eltwise add + ReLU, a strided conv, global average pool, a fully
connected classifier head). Input `image` 1x3x64x64, output `logits` 1x10.

Deterministic: the same numpy seed gives a byte-identical file.
Usage: .venv/bin/python models/make_tiny_cnn.py [OUT.onnx]
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(20261122)
inits = []
nodes = []


def const(name, arr):
    inits.append(numpy_helper.from_array(np.asarray(arr, dtype=np.float32), name))
    return name


def conv(x, cin, cout, k, stride, name, bn=True, relu=True):
    w = rng.normal(0, np.sqrt(2.0 / (cin * k * k)), size=(cout, cin, k, k))
    b = rng.normal(0, 0.05, size=(cout,))
    y = f"{name}_out"
    nodes.append(helper.make_node("Conv", [x, const(f"{name}_w", w), const(f"{name}_b", b)], [y],
                                  name=name, kernel_shape=[k, k], strides=[stride, stride],
                                  pads=[k // 2] * 4))
    if bn:
        z = f"{name}_bn"
        nodes.append(helper.make_node(
            "BatchNormalization",
            [y, const(f"{name}_g", rng.uniform(0.5, 1.5, cout)), const(f"{name}_beta", rng.normal(0, 0.1, cout)),
             const(f"{name}_mean", rng.normal(0, 0.1, cout)), const(f"{name}_var", rng.uniform(0.5, 1.5, cout))],
            [z], name=f"{name}/bn", epsilon=1e-5))
        y = z
    if relu:
        r = f"{name}_relu"
        nodes.append(helper.make_node("Relu", [y], [r], name=f"{name}/relu"))
        y = r
    return y


x = conv("image", 3, 16, 3, 1, "conv1")
nodes.append(helper.make_node("MaxPool", [x], ["pool1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]))
a = conv("pool1", 16, 16, 3, 1, "res_a")
b = conv(a, 16, 16, 3, 1, "res_b", relu=False)
nodes.append(helper.make_node("Add", ["pool1", b], ["res_sum"], name="res_add"))
nodes.append(helper.make_node("Relu", ["res_sum"], ["res_out"], name="res_relu"))
c = conv("res_out", 16, 32, 3, 2, "conv2")
nodes.append(helper.make_node("GlobalAveragePool", [c], ["gap"], name="gap"))
nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1))
w = rng.normal(0, np.sqrt(1.0 / 32), size=(10, 32))
nodes.append(helper.make_node("Gemm", ["flat", const("fc_w", w), const("fc_b", rng.normal(0, 0.1, 10))],
                              ["logits"], name="fc", transB=1))

graph = helper.make_graph(nodes, "tiny_cnn",
                          [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 64, 64])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="nnac models/make_tiny_cnn.py")
model.ir_version = 8
onnx.checker.check_model(model)
out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).with_name("tiny_cnn.onnx"))
out.write_bytes(model.SerializeToString())
print(f"wrote {out} ({out.stat().st_size} bytes)")
