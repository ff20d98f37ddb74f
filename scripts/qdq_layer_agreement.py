#!/usr/bin/env python3
"""Where do nnac's int8 codes first differ from ONNX Runtime's on a QDQ model?

Usage: qdq_layer_agreement.py MODEL_QDQ.onnx INPUT_NAME FRAMES.npy [--frames N]
                              [--every K] [--nnac target/release/nnac]
                              [--requant fixed|onnxruntime]

For every K-th activation the file quantizes (a QuantizeLinear of a non-constant
value, in graph order) it cuts the model at that value's DequantizeLinear (the value
becomes the only output; nodes it does not need are dropped), runs the first N frames
of FRAMES.npy (M x 1 x C x H x W) through ONNX Runtime (all graph optimizations: its
QLinear* kernels) and through `nnac eval --quantized` (the quantized reference
interpreter, bit-exact with the simulator; no --calib: the file's quantization), and
prints per value the share of codes that are equal, the share within one code, and
the largest difference. docs/QUANTIZATION.md ("Bring your own quantization") has
the measurements.

A cut can change what runs upstream of the value when the value fed two readers and
now feeds one: ONNX Runtime's Conv + Add fusion, for one, then takes a constant
addition after a convolution into it, without the file's rounding between them (the
`Clip@N` rows of a hard-swish's `x + 3`). Read a drop at one value together with the
values after it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from _ort_exact import session as exact_session
from onnx import numpy_helper


def cut(model: onnx.ModelProto, out: str) -> onnx.ModelProto:
    """`model` with `out` as its only output and only the nodes it needs."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.output[:]
    m.graph.output.append(onnx.helper.make_tensor_value_info(out, onnx.TensorProto.FLOAT, None))
    need, keep = {out}, []
    for n in reversed(list(m.graph.node)):
        if any(o in need for o in n.output):
            keep.append(n)
            need.update(n.input)
    del m.graph.node[:]
    m.graph.node.extend(reversed(keep))
    return m


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", type=Path)
    ap.add_argument("input")
    ap.add_argument("frames", type=Path)
    ap.add_argument("--frames", dest="n", type=int, default=8)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--nnac", default="target/release/nnac")
    ap.add_argument("--requant", default="fixed", help="nnac's --requant rule")
    a = ap.parse_args()
    ort.set_default_logger_severity(3)
    model = onnx.load(a.model)
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    frames = np.load(a.frames)[: a.n]
    dq_of = {n.input[0]: n for n in model.graph.node if n.op_type == "DequantizeLinear"}
    qs = [n for n in model.graph.node if n.op_type == "QuantizeLinear" and n.input[0] not in init]
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        np.save(t / "in.npy", frames)
        for q in qs[:: a.every]:
            dq = dq_of.get(q.output[0])
            if dq is None:
                continue
            onnx.save(cut(model, dq.output[0]), t / "cut.onnx")
            s = exact_session(t / "cut.onnx")
            ref = np.concatenate([s.run(None, {a.input: f})[0] for f in frames])
            out = t / "out"
            r = subprocess.run(
                [a.nnac, "eval", str(t / "cut.onnx"), "--quantized",
                 "--input", f"{a.input}={t / 'in.npy'}", "--output-dir", str(out),
                 "--requant", a.requant],
                capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{q.input[0]:40s} nnac: {r.stderr.strip()[:160]}")
                continue
            ours = np.load(next(out.iterdir())).reshape(ref.shape)
            for f in out.iterdir():
                f.unlink()
            scale = float(init[q.input[1]])
            d = np.abs(np.round(ref / scale) - np.round(ours / scale))
            print(f"{q.input[0]:40s} exact {np.mean(d == 0):.4f} within1 {np.mean(d <= 1):.4f} "
                  f"max {int(d.max())}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
