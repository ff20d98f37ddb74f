#!/usr/bin/env python3
"""ONNX Runtime's QuantizeLinear of a float32 .npy: the independent reference for nnac's
one float -> code rule (nnac_interp::host::quantize, docs/ISA.md "Quantizing inputs").

Usage: ref_quantize_linear.py IN.npy SCALE ZERO_POINT int8|uint8 OUT.npy

Builds a one-node model (opset 13, per-tensor scale and zero point) with onnx.helper,
runs it on the CPU provider, and writes the codes (int8 or uint8) to OUT.npy.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper


def main() -> int:
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 1
    src, scale, zp, dtype, dst = sys.argv[1:]
    x = np.load(src).astype(np.float32)
    np_type, onnx_type = {"int8": (np.int8, TensorProto.INT8),
                          "uint8": (np.uint8, TensorProto.UINT8)}[dtype]
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])],
        "q",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", onnx_type, list(x.shape))],
        [helper.make_tensor("s", TensorProto.FLOAT, [], [np.float32(scale)]),
         helper.make_tensor("z", onnx_type, [], [int(zp)])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": x})
    np.save(dst, y.astype(np_type))
    return 0


if __name__ == "__main__":
    sys.exit(main())
