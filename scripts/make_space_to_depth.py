#!/usr/bin/env python3
"""SpaceToDepth test models for tests/detectors.rs (issue 23, item 3).

    make_space_to_depth.py build OUTDIR   # s2d.onnx (opset 13), x.npy
    make_space_to_depth.py ref MODEL X.npy OUT.npy
                                          # onnx.reference's output (ONNX's own
                                          # implementation)

Each model is Conv 3x3 (3 -> 8) + Relu, SpaceToDepth by 2, Conv 1x1 (32 -> 4) on a
1x3x32x48 input, seeded random weights: the space-to-depth reads an activation the
NNA holds in SRAM, as a YOLO-style stem's would.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(rng: np.random.Generator) -> onnx.ModelProto:
    w1 = numpy_helper.from_array(rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.normal(0, 0.3, (4, 32, 1, 1)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], name="c1"),
        helper.make_node("Relu", ["a"], ["b"], name="r1"),
        helper.make_node("SpaceToDepth", ["b"], ["s"], name="s2d", blocksize=2),
        helper.make_node("Conv", ["s", "w2"], ["y"], name="c2"),
    ]
    g = helper.make_graph(
        nodes, "space_to_depth",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 48])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 24])], [w1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 10
    onnx.checker.check_model(m)
    return m


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "build":
        out = Path(sys.argv[2])
        out.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(0)
        onnx.save(model(rng), out / "s2d.onnx")
        np.save(out / "x.npy", rng.normal(0, 1, (1, 3, 32, 48)).astype(np.float32))
        return 0
    if len(sys.argv) == 5 and sys.argv[1] == "ref":
        from onnx.reference import ReferenceEvaluator
        m = onnx.load(sys.argv[2])
        (y,) = ReferenceEvaluator(m).run(None, {"x": np.load(sys.argv[3])})
        np.save(sys.argv[4], y)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
