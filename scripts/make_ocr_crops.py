#!/usr/bin/env python3
"""Deterministic int8-accuracy data for the PP-OCR models (tests/quant_accuracy.rs).

Usage: make_ocr_crops.py OUT_DIR [--images DIR] [--det-size HxW]

Writes float32 .npy files of N stacked 1xCxHxW frames, preprocessed as RapidOCR does (BGR, (x/255 - 0.5)/0.5 for
the classifier; ImageNet mean/std for the detector):
  cls_test.npy   N x 1 x 3 x 48 x 192  text-line crops of scikit-image's page.png and
                 text.png, each followed by the same crop rotated 180 degrees
  cls_calib.npy  M x 1 x 3 x 48 x 192  synthetic text (cv2.putText, seeded), cut the
                 way the test crops are cut: whole lines, and windows of the line
                 bands of synthetic pages (`windows()`, the test's crop geometry);
                 each followed by its 180-degree rotation; never the test images
  det_test.npy   3 x 1 x 3 x H x W     page.png, page.png rotated 180 degrees and its
                 top-left quarter enlarged, letterboxed to H x W (the detector finds
                 no text in text.png's handwriting at these sizes: its float
                 probability map is 0 everywhere, so it would measure nothing)
  det_calib.npy  K x 1 x 3 x H x W     synthetic text pages and other photographs
and the text file
  cls_test_sources.txt  one line per frame of cls_test.npy (same order, so each
                 source appears twice in a row: upright, then rotated): page-line or
                 text-line (a whole line band of page.png / text.png), page-window or
                 text-window (a window of a band)
Everything is a pure function of the images and fixed seeds.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

import cv2
import numpy as np

CLS_H, CLS_W = 48, 192
DET_MEAN = np.array([0.485, 0.456, 0.406], np.float32) * 255.0
DET_STD = np.array([0.229, 0.224, 0.225], np.float32) * 255.0
DET_CALIB_PHOTOS = ["coffee.png", "astronaut.png", "rocket.jpg", "logo.png"]


def cls_input(crop: np.ndarray) -> np.ndarray:
    """RapidOCR's classifier preprocessing: height 48, keep aspect up to width 192,
    normalise to [-1, 1], pad the right with zeros."""
    h, w = crop.shape[:2]
    rw = min(CLS_W, int(np.ceil(CLS_H * w / h)))
    img = cv2.resize(crop, (rw, CLS_H)).astype(np.float32)
    img = (img / 255.0 - 0.5) / 0.5
    out = np.zeros((3, CLS_H, CLS_W), np.float32)
    out[:, :, :rw] = img.transpose(2, 0, 1)
    return out


def line_bands(gray: np.ndarray) -> list[tuple[int, int]]:
    """Rows of text lines: runs of rows where more than 6% of the pixels are ink
    (darker than their 25 x 25 neighbourhood mean by 15 levels)."""
    ink = cv2.adaptiveThreshold(gray, 1, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV,
                                25, 15)
    rows = ink.sum(axis=1) > 0.06 * gray.shape[1]
    bands, start = [], None
    for y, on in enumerate(list(rows) + [False]):
        if on and start is None:
            start = y
        elif not on and start is not None:
            if y - start >= 8:
                bands.append((max(0, start - 3), min(gray.shape[0], y + 3)))
            start = None
    return bands


def ink_mask(img: np.ndarray) -> np.ndarray:
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    return cv2.adaptiveThreshold(gray, 1, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV,
                                 25, 15)


def is_text(crop_ink: np.ndarray) -> bool:
    """A text crop: ink in at least 60% of its columns (not the blank end of a line)."""
    return (crop_ink.sum(axis=0) > 0).mean() >= 0.6


def windows(img: np.ndarray, y0: int, y1: int) -> list[np.ndarray]:
    """Text crops of one band: the whole band, and windows of 3, 5 and 8 line heights
    (stride half a width) that hold text."""
    h, w = y1 - y0, img.shape[1]
    ink = ink_mask(img)
    out = [img[y0:y1]]
    for k in (3, 5, 8):
        cw = min(w, k * h)
        for x in range(0, w - cw + 1, max(1, cw // 2)):
            if is_text(ink[y0:y1, x : x + cw]):
                out.append(img[y0:y1, x : x + cw])
    return out


def labelled(name: str, crops: list[np.ndarray]) -> list[tuple[str, np.ndarray]]:
    """Source labels of one band's `windows()`: the first crop is the whole band."""
    return [(f"{name}-{'line' if i == 0 else 'window'}", c) for i, c in enumerate(crops)]


def test_crops(images: Path) -> list[tuple[str, np.ndarray]]:
    """(source, crop) pairs; source is page-line, page-window, text-line or text-window."""
    crops = []
    page = cv2.imread(str(images / "page.png"), cv2.IMREAD_COLOR)
    for y0, y1 in line_bands(cv2.cvtColor(page, cv2.COLOR_BGR2GRAY)):
        crops += labelled("page", windows(page, y0, y1))
    # text.png: handwriting on skewed lines; straighten by its dominant slant first.
    text = cv2.imread(str(images / "text.png"), cv2.IMREAD_COLOR)
    h, w = text.shape[:2]
    rot = cv2.getRotationMatrix2D((w / 2, h / 2), 14.0, 1.0)
    text = cv2.warpAffine(text, rot, (w, h), borderMode=cv2.BORDER_REPLICATE)
    for y0 in range(10, h - 40, 16):
        crops += labelled("text", windows(text, y0, y0 + 40))
    return crops


def synthetic_line(rng: np.random.Generator) -> np.ndarray:
    """A text line drawn with a Hershey font on a noisy light background."""
    words = ["quantize", "the", "scale", "of", "every", "layer", "int8", "NNA", "2026",
             "Region", "model", "pixels", "value", "x=(a+b)/2", "Fig. 3", "label"]
    text = " ".join(rng.choice(words, size=int(rng.integers(2, 6))))
    font = int(rng.choice([0, 1, 2, 3, 4, 6]))
    scale = float(rng.uniform(0.6, 1.2))
    thick = int(rng.integers(1, 3))
    (tw, th), base = cv2.getTextSize(text, font, scale, thick)
    bg = int(rng.integers(150, 250))
    img = np.full((th + base + 10, tw + 10, 3), bg, np.uint8)
    img = np.clip(img + rng.normal(0, 8, img.shape), 0, 255).astype(np.uint8)
    ink = int(rng.integers(0, 90))
    cv2.putText(img, text, (5, th + 5), font, scale, (ink, ink, ink), thick, cv2.LINE_AA)
    return img


def synthetic_page(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    page = np.full((h, w, 3), int(rng.integers(170, 250)), np.uint8)
    y = 10
    while y < h - 40:
        line = synthetic_line(rng)
        lh, lw = line.shape[:2]
        lw = min(lw, w - 10)
        if y + lh >= h:
            break
        page[y : y + lh, 5 : 5 + lw] = line[:, :lw]
        y += lh + int(rng.integers(2, 20))
    return page


def cls_calib_crops(rng: np.random.Generator) -> list[np.ndarray]:
    """The classifier's calibration crops: 24 whole synthetic lines and 48 windows of
    the line bands of synthetic pages, cut by the test's `windows()`. The windows
    matter: calibrated on the whole lines alone, int8 agreed with float on 394/444
    test crops, with the windows on 429/444 (measured 2026-11-26, default options;
    docs/QUANTIZATION.md)."""
    lines = [synthetic_line(rng) for _ in range(24)]
    # The pages draw from their own generator, so `rng` (shared with the detector's
    # calibration pages) moves as it did before the windows were added.
    page_rng = np.random.default_rng(20261126)
    wins = []
    for _ in range(6):
        page = synthetic_page(page_rng, 400, 600)
        for y0, y1 in line_bands(cv2.cvtColor(page, cv2.COLOR_BGR2GRAY)):
            wins += windows(page, y0, y1)
    keep = page_rng.choice(len(wins), size=min(48, len(wins)), replace=False)
    return lines + [wins[i] for i in sorted(keep)]


def det_input(img: np.ndarray, h: int, w: int) -> np.ndarray:
    """Letterbox to h x w (scale to fit, pad bottom/right with black), normalise."""
    s = min(h / img.shape[0], w / img.shape[1])
    rh, rw = max(1, round(img.shape[0] * s)), max(1, round(img.shape[1] * s))
    canvas = np.zeros((h, w, 3), np.float32)
    canvas[:rh, :rw] = cv2.resize(img, (rw, rh)).astype(np.float32)
    x = (canvas - DET_MEAN) / DET_STD
    x[rh:, :] = 0.0
    x[:, rw:] = 0.0
    return x.transpose(2, 0, 1)


def write_atomic(path: Path, data: bytes) -> None:
    """Writes `data` to `path` through a temporary file, so a reader never sees half."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def save(path: Path, frames: list[np.ndarray]) -> None:
    x = np.ascontiguousarray(np.stack(frames)[:, None], dtype=np.float32)
    buf = io.BytesIO()
    np.save(buf, x, allow_pickle=False)
    write_atomic(path, buf.getvalue())
    print(f"{path}: {list(x.shape)}")


def save_lines(path: Path, lines: list[str]) -> None:
    write_atomic(path, "".join(line + "\n" for line in lines).encode("utf-8"))
    print(f"{path}: {len(lines)} lines")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--images", type=Path,
                   default=Path(__file__).resolve().parent.parent / ".cache/models/images")
    p.add_argument("--det-size", default="224x448")
    a = p.parse_args()
    dh, dw = (int(v) for v in a.det_size.split("x"))
    a.out.mkdir(parents=True, exist_ok=True)
    for need in ["page.png", "text.png"] + DET_CALIB_PHOTOS:
        if not (a.images / need).is_file():
            print(f"make_ocr_crops: {a.images / need} is missing (run scripts/setup.sh)",
                  file=sys.stderr)
            return 1
    test, sources = [], []
    for src, c in test_crops(a.images):
        test += [cls_input(c), cls_input(cv2.rotate(c, cv2.ROTATE_180))]
        sources += [src, src]
    save(a.out / "cls_test.npy", test)
    save_lines(a.out / "cls_test_sources.txt", sources)
    rng = np.random.default_rng(20261122)
    calib = []
    for crop in cls_calib_crops(rng):
        calib += [cls_input(crop), cls_input(cv2.rotate(crop, cv2.ROTATE_180))]
    save(a.out / "cls_calib.npy", calib)
    page = cv2.imread(str(a.images / "page.png"), cv2.IMREAD_COLOR)
    zoom = page[: page.shape[0] // 2, : page.shape[1] // 2]
    save(a.out / "det_test.npy",
         [det_input(img, dh, dw) for img in (page, cv2.rotate(page, cv2.ROTATE_180), zoom)])
    det_calib = [det_input(synthetic_page(rng, dh, dw), dh, dw) for _ in range(4)]
    det_calib += [det_input(cv2.imread(str(a.images / n), cv2.IMREAD_COLOR), dh, dw)
                  for n in DET_CALIB_PHOTOS]
    save(a.out / "det_calib.npy", det_calib)
    return 0


if __name__ == "__main__":
    sys.exit(main())
