#!/usr/bin/env python3
"""The held-out digits and ONNX Runtime's outputs on them, for tests/qat_digits.rs.

Usage: qat_digits_ref.py OUT_DIR
Writes the split of scripts/digits_data.py (heldout_x.npy, heldout_y.npy, calib_x.npy)
and ONNX Runtime's logits of models/digits_float.onnx (ort_float.npy) and of the QDQ
model models/qat_digits.onnx executed with its int8 kernels (ort_qdq.npy), each
360 x 10 float32, one frame per run, and the QDQ model's output scale
(qdq_out_scale.txt: the step between two of its output codes).
"""
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

sys.dont_write_bytecode = True
import digits_data  # noqa: E402
from _ort_exact import session as exact_session  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def run(model, x):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.log_severity_level = 3
    s = exact_session(model, opts)
    return np.concatenate([s.run(None, {"image": f})[0] for f in x]).astype(np.float32)


def out_scale(model):
    m = onnx.load(str(model))
    last = m.graph.node[-1]
    assert last.op_type == "DequantizeLinear", last.op_type
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t)
              for n in m.graph.node if n.op_type == "Constant"}
    scale = inits.get(last.input[1], consts.get(last.input[1]))
    return float(np.asarray(scale).reshape(-1)[0])


def main():
    out = Path(sys.argv[1])
    digits_data.main_to(out)
    x = np.load(out / "heldout_x.npy")
    np.save(out / "ort_float.npy", run(ROOT / "models" / "digits_float.onnx", x))
    qdq = ROOT / "models" / "qat_digits.onnx"
    np.save(out / "ort_qdq.npy", run(qdq, x))
    (out / "qdq_out_scale.txt").write_text(f"{out_scale(qdq)!r}\n")


if __name__ == "__main__":
    main()
