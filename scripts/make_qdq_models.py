#!/usr/bin/env python3
"""Pre-quantized (QDQ) test models made by ONNX Runtime, and ONNX Runtime's int8 run
of them: the reference nnac's compiled program must agree with (tests/qdq_vs_ort.rs).

Usage: make_qdq_models.py OUT_DIR [--nets resnet50,mobilenet_v2,ppocr_cls,...]

For every net and each activation type (uint8 and int8, both asymmetric; MobileNet-v3
Large and EfficientNet-B0 of the arch models uint8 only; weights
int8 symmetric per channel, onnxruntime.quantization.quantize_static, QDQ format,
MinMax calibration) it writes to OUT_DIR:
  <net>_<u8|s8>.onnx   the QDQ model, without a final Softmax (its output is then a
                       quantized tensor, the logits, whose codes can be compared;
                       the float model is first pre-processed (two-input Sum written
                       as Add, which ONNX Runtime quantizes; a model opset below 13
                       converted to 13 for per-axis quantization), then by ONNX Runtime's
                       quant_pre_process: shape inference, Conv+BN/Mul/Add fusion)
  <net>_calib.npy      N x 1 x C x H x W frames ONNX Runtime calibrated on
  <net>_test.npy       M x 1 x C x H x W test frames (never in the calibration set)
  <net>_<u8|s8>_ort.npy  ONNX Runtime's output on every test frame (stacked), run
                       with all graph optimizations (its int8 kernels: QLinearConv...)
and prints one JSON line per model: output scale and zero point, ORT's top-1.
A run whose OUT_DIR/.stamp names the same script, versions and nets does nothing.
Frames: the ImageNet-style nets take photographs of .cache/models/images cut into
224 x 224 windows (seeded), normalised with the ImageNet mean/std; the classifier
takes scripts/make_ocr_crops.py's crops (calibration: cls_calib.npy's first frames,
test: cls_test.npy). Everything is a pure function of the models, images and seeds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.version_converter
import onnxruntime as ort
from _ort_exact import session as exact_session
from onnxruntime.quantization.shape_inference import quant_pre_process
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                      QuantType, quantize_static)

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / ".cache" / "models"
NETS = {
    "resnet50": (MODELS / "light" / "resnet50.onnx", (3, 224, 224)),
    "mobilenet_v2": (MODELS / "arch" / "mobilenet_v2.onnx", (3, 224, 224)),
    "ppocr_cls": (MODELS / "rapidocr" / "ch_ppocr_mobile_v2.0_cls_infer.onnx", (3, 48, 192)),
    "mobilenet_v3_large": (MODELS / "arch" / "mobilenet_v3_large.onnx", (3, 224, 224)),
    "efficientnet_b0": (MODELS / "arch" / "efficientnet_b0.onnx", (3, 224, 224)),
}
ACTS = {"u8": QuantType.QUInt8, "s8": QuantType.QInt8}
# The mobile networks with squeeze-and-excitation (hard-swish, SiLU) in uint8 only.
ONLY_U8 = {"mobilenet_v3_large", "efficientnet_b0"}
SEED = 25


class Frames(CalibrationDataReader):
    def __init__(self, name: str, frames: np.ndarray):
        self.items = iter([{name: f} for f in frames])

    def get_next(self):
        return next(self.items, None)


def photo_windows(count: int, seed: int) -> np.ndarray:
    import cv2
    rng = np.random.default_rng(seed)
    images = sorted((MODELS / "images").glob("*.png")) + sorted((MODELS / "images").glob("*.jpg"))
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    out = []
    for i in range(count):
        img = cv2.imread(str(images[i % len(images)]), cv2.IMREAD_COLOR)[:, :, ::-1]
        scale = 224.0 / min(img.shape[:2]) * rng.uniform(1.0, 1.6)
        img = cv2.resize(img, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        y = rng.integers(0, img.shape[0] - 224 + 1)
        x = rng.integers(0, img.shape[1] - 224 + 1)
        crop = (img[y:y + 224, x:x + 224].astype(np.float32) / 255.0 - mean) / std
        out.append(crop.transpose(2, 0, 1)[None])
    return np.stack(out).astype(np.float32)


def ocr_frames() -> tuple[np.ndarray, np.ndarray]:
    d = ROOT / ".cache" / "quant-ocr"
    if not (d / "cls_test.npy").is_file():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "make_ocr_crops.py"), str(d)],
                       check=True)
    calib = np.load(d / "cls_calib.npy")
    return calib[:64], np.load(d / "cls_test.npy")


def prepared(net: str, path: Path, chw, out: Path) -> str:
    """The float model with its input fixed to 1 x C x H x W (the classifier without
    its final Softmax); returns the input name."""
    m = onnx.load(str(path))
    opset = next(i.version for i in m.opset_import if i.domain in ("", "ai.onnx"))
    if opset < 13:  # per-axis DequantizeLinear needs opset 13
        m = onnx.version_converter.convert_version(m, 13)
    inp = m.graph.input[0]
    for d, v in zip(inp.type.tensor_type.shape.dim, (1, *chw)):
        d.ClearField("dim_param")
        d.dim_value = int(v)
    for n in m.graph.node:
        if n.op_type == "Sum" and len(n.input) == 2:
            n.op_type = "Add"  # the same op; ONNX Runtime quantizes Add, not Sum
    # A Softmax among the last nodes (before a final Reshape or Identity) is left out: its
    # producer writes its output (the logits) instead.
    for last in list(m.graph.node[-4:]):
        if last.op_type == "Softmax":
            m.graph.node.remove(last)
            for n in m.graph.node:
                n.output[:] = [last.output[0] if o == last.input[0] else o for o in n.output]
    raw = out.with_suffix(".raw.onnx")
    onnx.save(m, str(raw))
    quant_pre_process(str(raw), str(out), skip_symbolic_shape=True)
    raw.unlink()
    return inp.name


def output_qparams(model: onnx.ModelProto):
    """Scale and zero point of the QuantizeLinear whose DequantizeLinear gives the
    graph output."""
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    out = model.graph.output[0].name
    dq = next(n for n in model.graph.node if out in n.output)
    assert dq.op_type == "DequantizeLinear", dq.op_type
    return float(inits[dq.input[1]]), int(inits[dq.input[2]])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--nets", default=",".join(NETS))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    import hashlib
    here = Path(__file__).resolve().parent
    sha = {f: hashlib.sha256((here / f).read_bytes()).hexdigest()
           for f in (Path(__file__).name, "_ort_exact.py")}
    stamp = (f"script={sha[Path(__file__).name]}\nort_exact={sha['_ort_exact.py']}\n"
             f"onnxruntime={ort.__version__}\nonnx={onnx.__version__}\nnets={args.nets}\n")
    stamp_file = args.out / ".stamp"
    if stamp_file.is_file() and stamp_file.read_text() == stamp:
        print(f"make_qdq_models: up to date in {args.out}")
        return 0
    for net in args.nets.split(","):
        path, chw = NETS[net]
        if net == "ppocr_cls":
            calib, test = ocr_frames()
        else:
            calib = photo_windows(16, SEED)
            test = photo_windows(24, SEED + 1)
        np.save(args.out / f"{net}_calib.npy", calib)
        np.save(args.out / f"{net}_test.npy", test)
        float_path = args.out / f"{net}_float.onnx"
        name = prepared(net, path, chw, float_path)
        for tag, act in ACTS.items():
            if net in ONLY_U8 and tag != "u8":
                continue
            q_path = args.out / f"{net}_{tag}.onnx"
            quantize_static(str(float_path), str(q_path), Frames(name, calib),
                            quant_format=QuantFormat.QDQ, per_channel=True,
                            activation_type=act, weight_type=QuantType.QInt8,
                            calibrate_method=CalibrationMethod.MinMax)
            sess = exact_session(q_path)
            outs = np.stack([sess.run(None, {name: f})[0] for f in test])
            np.save(args.out / f"{net}_{tag}_ort.npy", outs)
            scale, zp = output_qparams(onnx.load(str(q_path)))
            print(json.dumps({"model": q_path.name, "input": name, "output_scale": scale,
                              "output_zero_point": zp, "frames": len(test),
                              "ort_top1": outs.reshape(len(test), -1).argmax(1).tolist()[:8]}))
    stamp_file.write_text(stamp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
