#!/usr/bin/env python3
"""ONNX Runtime's static int8 quantization as the baseline for nnac's quantizer.

Usage: ort_quantize.py MODEL.onnx CALIB.npy TEST.npy OUT_DIR
                       [--method minmax|percentile|entropy] [--percentile P]
                       [--input x] [--mask-threshold 0.3]

CALIB.npy and TEST.npy hold N stacked frames (N x 1 x C x H x W float32, as written
by scripts/make_ocr_crops.py). The model's input is fixed to the frame shape, then
quantized with onnxruntime.quantization.quantize_static: QDQ format, per-channel
int8 weights, uint8 activations, a CalibrationDataReader over CALIB.npy and the
calibration method given (percentile: 99.99, nnac's default method until 2026-11-28). Both the
float and the int8 model run on every TEST frame; OUT_DIR receives float.npy and
int8.npy (the first output, stacked) and the line printed on stdout is JSON:
{"method": ..., "max_abs_diff": ..., then for a classifier (output N x classes)
"class_agreement": fraction of frames with the same argmax, else "mask_iou": [per
frame] and "mean_mask_iou", the mask being output > --mask-threshold (PP-OCR's DB
post-processing threshold). With --outputs-dir DIR, every output of the int8 model on
the first TEST frame is also written as DIR/<output name>.npy, the layout `nnac run`
and `nnac eval` write (for multi-output models such as detectors).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from _ort_exact import session as exact_session
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                      QuantType, quantize_static)

METHODS = {
    "minmax": CalibrationMethod.MinMax,
    "percentile": CalibrationMethod.Percentile,
    "entropy": CalibrationMethod.Entropy,
}


class Frames(CalibrationDataReader):
    def __init__(self, name: str, frames: np.ndarray):
        self.items = iter([{name: f} for f in frames])

    def get_next(self):
        return next(self.items, None)


def fix_input_shape(model: Path, name: str, shape, out: Path) -> None:
    m = onnx.load(str(model))
    for i in m.graph.input:
        if i.name == name:
            dims = i.type.tensor_type.shape.dim
            for d, v in zip(dims, shape):
                d.ClearField("dim_param")
                d.dim_value = int(v)
    onnx.save(m, str(out))


def run(model: Path, name: str, frames: np.ndarray) -> np.ndarray:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    s = exact_session(model, opts)
    return np.stack([s.run(None, {name: f})[0] for f in frames])


def iou(a: np.ndarray, b: np.ndarray) -> float:
    union = np.logical_or(a, b).sum()
    return 1.0 if union == 0 else float(np.logical_and(a, b).sum() / union)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", type=Path)
    p.add_argument("calib", type=Path)
    p.add_argument("test", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--method", choices=sorted(METHODS), default="percentile")
    p.add_argument("--percentile", type=float, default=99.99)
    p.add_argument("--input", default="x")
    p.add_argument("--mask-threshold", type=float, default=0.3)
    p.add_argument("--outputs-dir", type=Path)
    a = p.parse_args()
    calib = np.load(a.calib).astype(np.float32)
    test = np.load(a.test).astype(np.float32)
    if calib.ndim != 5 or test.ndim != 5 or calib.shape[1:] != test.shape[1:]:
        print(f"ort_quantize: expected N x 1 x C x H x W frames of one shape, got "
              f"{calib.shape} and {test.shape}", file=sys.stderr)
        return 1
    a.out.mkdir(parents=True, exist_ok=True)
    fixed = a.out / "float.onnx"
    fix_input_shape(a.model, a.input, calib.shape[1:], fixed)
    qmodel = a.out / "int8.onnx"
    quantize_static(
        str(fixed), str(qmodel), Frames(a.input, calib),
        quant_format=QuantFormat.QDQ, per_channel=True,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
        calibrate_method=METHODS[a.method],
        extra_options={"CalibPercentile": a.percentile},
    )
    if a.outputs_dir is not None:
        a.outputs_dir.mkdir(parents=True, exist_ok=True)
        s = exact_session(qmodel)
        for o, v in zip(s.get_outputs(), s.run(None, {a.input: test[0]})):
            np.save(a.outputs_dir / f"{o.name}.npy", v)
    f = run(fixed, a.input, test)
    q = run(qmodel, a.input, test)
    np.save(a.out / "float.npy", f)
    np.save(a.out / "int8.npy", q)
    result = {"method": a.method, "max_abs_diff": float(np.abs(f - q).max())}
    if f.ndim == 3:  # N x 1 x classes: a classifier
        result["class_agreement"] = float(np.mean(f.argmax(-1) == q.argmax(-1)))
    else:
        ious = [iou(x > a.mask_threshold, y > a.mask_threshold) for x, y in zip(f, q)]
        result["mask_iou"] = ious
        result["mean_mask_iou"] = float(np.mean(ious))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
