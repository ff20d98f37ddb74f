#!/usr/bin/env python3
"""Build the detector test corpus with onnx.helper: YOLOv8n- and YOLOv5s-style
detectors with seeded random weights, in the topology ultralytics exports.

    yolov8n.onnx        YOLOv8n (width 0.25, depth 0.33): Conv(+folded BN)+SiLU written as
                        x*Sigmoid(x), C2f blocks (Split, bottlenecks, Concat), SPPF (three
                        5x5 max pools), nearest Resize x2, Concat (FPN/PAN), the decoupled
                        head and the DFL / anchor decode on 3-D tensors: Reshape to
                        [1, 4+... , 2100], Concat on axis 2, Split, Softmax over 16 bins,
                        the DFL 1x1 Conv, dist2bbox arithmetic with anchor and stride
                        constants, Sigmoid of the classes; output [1, 4+NC, 2100].
    yolov5s.onnx        YOLOv5s (width 0.5, depth 0.33): Conv+SiLU, C3 blocks, SPPF,
                        Resize, Concat; Detect head: per level a 1x1 Conv, Reshape to
                        [1, 3, 5+NC, H, W], Transpose to [1, 3, H, W, 5+NC], Sigmoid and
                        the grid / anchor decode (5-D arithmetic), Reshape to
                        [1, 3*H*W, 5+NC], Concat on axis 1; output [1, 6300, 5+NC].
    yolov5s_focus.onnx  the same with the YOLOv5 v1-v5 "Focus" stem: four Slice ops of
                        step 2 on H and W (space-to-depth), Concat, Conv.
    camera_cnn_<H>x<W>.onnx  a small CNN on a whole camera frame (960x1280, 1080x1920):
                        planes above one DMA row (1 MiB); Conv+SiLU stride 2 twice, a
                        3x3 Conv, global average pool, Gemm to 10 classes.

Input `images` 1x3x320x320 (2100 anchor points for v8 = 40^2 + 20^2 + 10^2), NC = 80.
Weights: He-normal convolutions with small biases, drawn from one generator seeded per
model; deterministic (byte-identical files). ultralytics builds the real architectures
(`YOLO("yolov8n.yaml")`) and exports them with PyTorch; docs/MODELS.md gives that recipe.
These files keep PyTorch out of the test command.

Writes $ROOT/.cache/models/detectors/<net>.onnx, checked with onnx.checker and run
once with ONNX Runtime. Idempotent (stamp file).
Usage: make_detectors.py [--force] [--size HxW] [--out DIR] [NET ...]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import zlib
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / ".cache" / "models" / "detectors"
NC = 80
REG_MAX = 16
SEED_BASE = 20261127
NETS = ("yolov8n", "yolov5s", "yolov5s_focus", "camera_cnn_960x1280", "camera_cnn_1080x1920")


class Builder:
    """Accumulates nodes and initializers of one graph; names are unique per call."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.n = 0

    def uid(self, base: str) -> str:
        self.n += 1
        return f"{base}_{self.n}"

    def const(self, arr, dtype=np.float32, base="c") -> str:
        name = self.uid(base)
        self.inits.append(numpy_helper.from_array(np.asarray(arr, dtype=dtype), name))
        return name

    def op(self, op_type: str, ins, base: str, n_out: int = 1, **attrs):
        name = self.uid(base)
        outs = [f"{name}_out{k}" if n_out > 1 else f"{name}_out" for k in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(ins), outs, name=name, **attrs))
        return outs if n_out > 1 else outs[0]

    def conv(self, x, cin, cout, k=1, s=1, act=True, base="conv", bias_std=0.05):
        w = self.rng.standard_normal((cout, cin, k, k), dtype=np.float32) \
            * np.float32(np.sqrt(2.0 / (cin * k * k)))
        b = self.rng.standard_normal((cout,), dtype=np.float32) * np.float32(bias_std)
        y = self.op("Conv", [x, self.const(w, base=f"{base}.w"), self.const(b, base=f"{base}.b")],
                    base, kernel_shape=[k, k], strides=[s, s], pads=[(k - 1) // 2] * 4)
        if act:
            sig = self.op("Sigmoid", [y], f"{base}/sigmoid")
            y = self.op("Mul", [y, sig], f"{base}/silu")
        return y

    def concat(self, xs, axis=1):
        return self.op("Concat", xs, "cat", axis=axis)

    def split(self, x, sizes, axis=1):
        return self.op("Split", [x, self.const(sizes, np.int64, "split")], "split",
                       n_out=len(sizes), axis=axis)

    def reshape(self, x, shape):
        return self.op("Reshape", [x, self.const(shape, np.int64, "shape")], "reshape")

    def upsample(self, x):
        scales = self.const([1.0, 1.0, 2.0, 2.0], base="scales")
        return self.op("Resize", [x, "", scales], "upsample", mode="nearest")

    def sppf(self, x, c1, c2):
        c_ = c1 // 2
        y = [self.conv(x, c1, c_, base="sppf.cv1")]
        for _ in range(3):
            y.append(self.op("MaxPool", [y[-1]], "sppf.m", kernel_shape=[5, 5], pads=[2] * 4,
                             strides=[1, 1]))
        return self.conv(self.concat(y), c_ * 4, c2, base="sppf.cv2")

    def bottleneck(self, x, c1, c2, shortcut, e=1.0, k2=3):
        c_ = int(c2 * e)
        y = self.conv(self.conv(x, c1, c_, 3 if e == 1.0 and k2 == 3 else 1, base="bn.cv1"),
                      c_, c2, 3, base="bn.cv2")
        return self.op("Add", [x, y], "bn.add") if shortcut and c1 == c2 else y

    def c2f(self, x, c1, c2, n, shortcut):
        c = c2 // 2
        y = list(self.split(self.conv(x, c1, 2 * c, base="c2f.cv1"), [c, c]))
        for _ in range(n):
            y.append(self.bottleneck(y[-1], c, c, shortcut))
        return self.conv(self.concat(y), (2 + n) * c, c2, base="c2f.cv2")

    def c3(self, x, c1, c2, n, shortcut):
        c_ = c2 // 2
        a = self.conv(x, c1, c_, base="c3.cv1")
        for _ in range(n):
            a = self.conv(self.conv(a, c_, c_, 1, base="c3.m.cv1"), c_, c_, 3, base="c3.m.cv2") \
                if not shortcut else self.op("Add", [a, self.conv(
                    self.conv(a, c_, c_, 1, base="c3.m.cv1"), c_, c_, 3, base="c3.m.cv2")],
                    "c3.m.add")
        b = self.conv(x, c1, c_, base="c3.cv2")
        return self.conv(self.concat([a, b]), 2 * c_, c2, base="c3.cv3")


def yolov8n(b: Builder, h: int, w: int) -> str:
    ch = [16, 32, 64, 128, 256]
    x = b.conv("images", 3, ch[0], 3, 2, base="m0")
    x = b.conv(x, ch[0], ch[1], 3, 2, base="m1")
    x = b.c2f(x, ch[1], ch[1], 1, True)
    x = b.conv(x, ch[1], ch[2], 3, 2, base="m3")
    p3 = b.c2f(x, ch[2], ch[2], 2, True)
    x = b.conv(p3, ch[2], ch[3], 3, 2, base="m5")
    p4 = b.c2f(x, ch[3], ch[3], 2, True)
    x = b.conv(p4, ch[3], ch[4], 3, 2, base="m7")
    x = b.c2f(x, ch[4], ch[4], 1, True)
    p5 = b.sppf(x, ch[4], ch[4])
    x = b.c2f(b.concat([b.upsample(p5), p4]), ch[4] + ch[3], ch[3], 1, False)
    n4 = x
    x = b.c2f(b.concat([b.upsample(x), p3]), ch[3] + ch[2], ch[2], 1, False)
    o3 = x
    x = b.c2f(b.concat([b.conv(o3, ch[2], ch[2], 3, 2, base="m16"), n4]), ch[2] + ch[3],
              ch[3], 1, False)
    o4 = x
    x = b.c2f(b.concat([b.conv(o4, ch[3], ch[3], 3, 2, base="m19"), p5]), ch[3] + ch[4],
              ch[4], 1, False)
    o5 = x
    # Detect head (ultralytics v8): per level box (4*REG_MAX) and class (NC) branches.
    c2, c3 = max(16, ch[2] // 4, 4 * REG_MAX), max(ch[2], min(NC, 100))
    levels, anchors, strides = [], [], []
    for feat, cin, stride in ((o3, ch[2], 8), (o4, ch[3], 16), (o5, ch[4], 32)):
        box = b.conv(b.conv(b.conv(feat, cin, c2, 3, base="cv2.0"), c2, c2, 3, base="cv2.1"),
                     c2, 4 * REG_MAX, 1, act=False, base="cv2.2", bias_std=0.5)
        cls = b.conv(b.conv(b.conv(feat, cin, c3, 3, base="cv3.0"), c3, c3, 3, base="cv3.1"),
                     c3, NC, 1, act=False, base="cv3.2", bias_std=0.5)
        hh, ww = h // stride, w // stride
        levels.append(b.reshape(b.concat([box, cls]), [1, 4 * REG_MAX + NC, hh * ww]))
        ys, xs = np.meshgrid(np.arange(hh) + 0.5, np.arange(ww) + 0.5, indexing="ij")
        anchors.append(np.stack([xs.ravel(), ys.ravel()]))
        strides.append(np.full((1, hh * ww), stride))
    n = sum(a.shape[1] for a in anchors)
    cat = b.concat(levels, axis=2)
    box, cls = b.split(cat, [4 * REG_MAX, NC], axis=1)
    # DFL: softmax over REG_MAX bins, expectation by a fixed 1x1 convolution.
    d = b.reshape(box, [1, 4, REG_MAX, n])
    d = b.op("Transpose", [d], "dfl.transpose", perm=[0, 2, 1, 3])
    d = b.op("Softmax", [d], "dfl.softmax", axis=1)
    dfl_w = b.const(np.arange(REG_MAX, dtype=np.float32).reshape(1, REG_MAX, 1, 1), base="dfl.w")
    d = b.op("Conv", [d, dfl_w], "dfl.conv", kernel_shape=[1, 1])
    d = b.reshape(d, [1, 4, n])
    lt, rb = b.split(d, [2, 2], axis=1)
    anc = b.const(np.concatenate(anchors, axis=1).reshape(1, 2, n), base="anchors")
    x1y1 = b.op("Sub", [anc, lt], "dist2bbox.sub")
    x2y2 = b.op("Add", [anc, rb], "dist2bbox.add")
    c_xy = b.op("Div", [b.op("Add", [x1y1, x2y2], "dist2bbox.add"), b.const(2.0, base="two")],
                "dist2bbox.div")
    wh = b.op("Sub", [x2y2, x1y1], "dist2bbox.sub")
    dbox = b.op("Mul", [b.concat([c_xy, wh]), b.const(np.concatenate(strides, axis=1)
                                                      .reshape(1, 1, n), base="strides")],
                "dist2bbox.mul")
    return b.concat([dbox, b.op("Sigmoid", [cls], "cls.sigmoid")])


def yolov5s(b: Builder, h: int, w: int, focus: bool) -> str:
    ch = [32, 64, 128, 256, 512]
    if focus:
        # Focus: x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2].
        parts = []
        for y0, x0 in ((0, 0), (1, 0), (0, 1), (1, 1)):
            parts.append(b.op("Slice", ["images", b.const([y0, x0], np.int64, "starts"),
                                        b.const([h, w], np.int64, "ends"),
                                        b.const([2, 3], np.int64, "axes"),
                                        b.const([2, 2], np.int64, "steps")], "focus.slice"))
        x = b.conv(b.concat(parts), 12, ch[0], 3, 1, base="m0")
    else:
        x = b.conv("images", 3, ch[0], 6, 2, base="m0")
    x = b.conv(x, ch[0], ch[1], 3, 2, base="m1")
    x = b.c3(x, ch[1], ch[1], 1, True)
    x = b.conv(x, ch[1], ch[2], 3, 2, base="m3")
    p3 = b.c3(x, ch[2], ch[2], 2, True)
    x = b.conv(p3, ch[2], ch[3], 3, 2, base="m5")
    p4 = b.c3(x, ch[3], ch[3], 3, True)
    x = b.conv(p4, ch[3], ch[4], 3, 2, base="m7")
    x = b.c3(x, ch[4], ch[4], 1, True)
    x = b.sppf(x, ch[4], ch[4])
    h10 = b.conv(x, ch[4], ch[3], base="m10")
    x = b.c3(b.concat([b.upsample(h10), p4]), ch[4], ch[3], 1, False)
    h14 = b.conv(x, ch[3], ch[2], base="m14")
    o3 = b.c3(b.concat([b.upsample(h14), p3]), ch[3], ch[2], 1, False)
    x = b.conv(o3, ch[2], ch[2], 3, 2, base="m18")
    o4 = b.c3(b.concat([x, h14]), ch[3], ch[3], 1, False)
    x = b.conv(o4, ch[3], ch[3], 3, 2, base="m21")
    o5 = b.c3(b.concat([x, h10]), ch[4], ch[4], 1, False)
    anchors = ([10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119],
               [116, 90, 156, 198, 373, 326])
    no = 5 + NC
    outs = []
    for i, (feat, cin, stride) in enumerate(((o3, ch[2], 8), (o4, ch[3], 16), (o5, ch[4], 32))):
        hh, ww = h // stride, w // stride
        y = b.conv(feat, cin, 3 * no, 1, act=False, base=f"detect.m{i}", bias_std=0.5)
        y = b.reshape(y, [1, 3, no, hh, ww])
        y = b.op("Transpose", [y], "detect.transpose", perm=[0, 1, 3, 4, 2])
        y = b.op("Sigmoid", [y], "detect.sigmoid")
        xy, wh, conf = b.split(y, [2, 2, no - 4], axis=4)
        ys, xs = np.meshgrid(np.arange(hh), np.arange(ww), indexing="ij")
        grid = (np.stack([xs, ys], axis=-1).reshape(1, 1, hh, ww, 2) - 0.5) * stride
        anchor_grid = np.array(anchors[i], dtype=np.float32).reshape(1, 3, 1, 1, 2)
        xy = b.op("Add", [b.op("Mul", [xy, b.const(2.0 * stride, base="two_s")], "detect.mul"),
                          b.const(grid, base="grid")], "detect.add")
        wh2 = b.op("Mul", [wh, b.const(2.0, base="two")], "detect.mul")
        wh = b.op("Mul", [b.op("Mul", [wh2, wh2], "detect.sq"), b.const(anchor_grid, base="ag")],
                  "detect.mul")
        y = b.op("Concat", [xy, wh, conf], "detect.cat", axis=4)
        outs.append(b.reshape(y, [1, 3 * hh * ww, no]))
    return b.concat(outs, axis=1)


def camera_cnn(b: Builder) -> str:
    x = b.conv("images", 3, 8, 3, 2, base="stem")
    x = b.conv(x, 8, 16, 3, 2, base="down")
    x = b.conv(x, 16, 16, 3, 1, base="body")
    x = b.op("GlobalAveragePool", [x], "gap")
    x = b.op("Flatten", [x], "flatten", axis=1)
    w = b.rng.standard_normal((10, 16), dtype=np.float32) * np.float32(0.3)
    return b.op("Gemm", [x, b.const(w, base="fc.w"), b.const(np.zeros(10), base="fc.b")],
                "fc", transB=1)


def build(net: str, h: int, w: int) -> onnx.ModelProto:
    b = Builder(SEED_BASE ^ zlib.crc32(net.encode()))
    if net.startswith("camera_cnn_"):
        h, w = (int(v) for v in net.rsplit("_", 1)[1].split("x"))
        out = camera_cnn(b)
    elif net == "yolov8n":
        out = yolov8n(b, h, w)
    else:
        out = yolov5s(b, h, w, focus=net.endswith("_focus"))
    b.nodes.append(helper.make_node("Identity", [out], ["output0"], name="output"))
    points = sum((h // s) * (w // s) for s in (8, 16, 32))
    out_shape = [1, 4 + NC, points] if net == "yolov8n" else [1, 3 * points, 5 + NC]
    if net.startswith("camera_cnn_"):
        out_shape = [1, 10]
    graph = helper.make_graph(
        b.nodes, net,
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, h, w])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, out_shape)],
        b.inits)
    model = helper.make_model(graph, producer_name="nnac scripts/make_detectors.py",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return onnx.shape_inference.infer_shapes(model)


def check_with_ort(path: Path, h: int, w: int) -> tuple:
    import onnxruntime as ort
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((1, 3, h, w), dtype=np.float32)
    (y,) = sess.run(None, {"images": x})
    if not np.isfinite(y).all():
        raise RuntimeError(f"{path.name}: ONNX Runtime output is not finite")
    return y.shape


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("nets", nargs="*", help=f"subset of {NETS}")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--size", default="320x320", help="input HxW (multiples of 32)")
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    args = ap.parse_args()
    nets = args.nets or list(NETS)
    bad = [n for n in nets if n not in NETS]
    if bad:
        print(f"make_detectors: unknown net(s) {bad}; nets: {', '.join(NETS)}", file=sys.stderr)
        return 1
    h, w = (int(v) for v in args.size.lower().split("x"))
    if h % 32 or w % 32:
        print("make_detectors: --size must be multiples of 32", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    script_hash = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    for net in nets:
        fixed = net.startswith("camera_cnn_") or (h, w) == (320, 320)
        path = args.out / (f"{net}.onnx" if fixed else f"{net}_{h}x{w}.onnx")
        stamp = path.with_suffix(".stamp")
        if not args.force and path.is_file() and stamp.is_file() \
                and stamp.read_text() == script_hash:
            print(f"make_detectors: {path.name} up to date")
            continue
        model = build(net, h, w)
        path.write_bytes(model.SerializeToString())
        ih, iw = (d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim[2:])
        shape = check_with_ort(path, ih, iw)
        stamp.write_text(script_hash)
        print(f"make_detectors: wrote {path} ({path.stat().st_size / 1e6:.1f} MB, "
              f"output {list(shape)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
