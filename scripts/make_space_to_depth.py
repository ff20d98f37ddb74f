#!/usr/bin/env python3
"""SpaceToDepth and DepthToSpace test models for tests/detectors.rs (issue 23, item 3).

    make_space_to_depth.py OUTDIR   # s2d.onnx, d2s_dcr.onnx, d2s_crd.onnx (opset 13),
                                    # x.npy

Each model is Conv 3x3 (3 -> 8) + Relu, then SpaceToDepth by 2 and Conv 1x1 (32 -> 4),
or DepthToSpace by 2 (mode DCR or CRD) and Conv 1x1 (2 -> 4), on a 1x3x32x48 input,
seeded random weights: the layout move reads an activation the NNA holds in SRAM, as
a YOLO-style stem's or a super-resolution head's would.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(rng: np.random.Generator, mode: str | None) -> onnx.ModelProto:
    """SpaceToDepth without a mode, else DepthToSpace in `mode`."""
    w1 = numpy_helper.from_array(rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32), "w1")
    c2, (h, w) = (32, (16, 24)) if mode is None else (2, (64, 96))
    w2 = numpy_helper.from_array(rng.normal(0, 0.3, (4, c2, 1, 1)).astype(np.float32), "w2")
    move = (helper.make_node("SpaceToDepth", ["b"], ["s"], name="s2d", blocksize=2)
            if mode is None else
            helper.make_node("DepthToSpace", ["b"], ["s"], name="d2s", blocksize=2, mode=mode))
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], name="c1"),
        helper.make_node("Relu", ["a"], ["b"], name="r1"),
        move,
        helper.make_node("Conv", ["s", "w2"], ["y"], name="c2"),
    ]
    g = helper.make_graph(
        nodes, "space_to_depth",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 48])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, h, w])], [w1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 10
    onnx.checker.check_model(m)
    return m


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    onnx.save(model(rng, None), out / "s2d.onnx")
    onnx.save(model(rng, "DCR"), out / "d2s_dcr.onnx")
    onnx.save(model(rng, "CRD"), out / "d2s_crd.onnx")
    np.save(out / "x.npy", rng.normal(0, 1, (1, 3, 32, 48)).astype(np.float32))
    return 0


if __name__ == "__main__":
    sys.exit(main())
