#!/usr/bin/env python3
"""Turn an image into a model input: float32, batch 1, NCHW (or NHWC).

Usage: image_to_npy.py IMAGE OUT.npy --size HxW [--bgr] [--mean a,b,c] [--scale s]
                       [--layout nchw|nhwc] [--rotate180]
Loads IMAGE with OpenCV (colour, 3 channels), resizes it to H x W (area interpolation
when shrinking, linear when enlarging), keeps RGB channel order unless --bgr, then
computes (pixel - mean) * scale per channel on 0..255 values, e.g. Caffe's open_nsfw:
--bgr --mean 104,117,123; an ImageNet-normalised RGB net: --mean 123.7,116.3,103.5
--scale 0.0171. --rotate180 turns the image upside down (labelled data for text
orientation). Writes OUT.npy atomically. Exit status: 0 ok, 1 bad input.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np


def parse_size(text: str) -> tuple[int, int]:
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--size {text!r}: expected HxW, e.g. 224x224")
    if h <= 0 or w <= 0:
        raise argparse.ArgumentTypeError(f"--size {text!r}: dimensions must be positive")
    return h, w


def parse_mean(text: str) -> np.ndarray:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--mean {text!r}: expected a,b,c")
    if len(values) not in (1, 3):
        raise argparse.ArgumentTypeError(f"--mean {text!r}: expected 1 or 3 values")
    return np.array(values * (3 // len(values)), dtype=np.float32)


def convert(image: Path, size, bgr: bool, mean, scale: float, layout: str,
            rotate180: bool) -> np.ndarray:
    import cv2
    img = cv2.imread(str(image), cv2.IMREAD_COLOR)
    if img is None:
        raise ValueError(f"cannot read image {image}")
    h, w = size
    interp = cv2.INTER_AREA if h < img.shape[0] and w < img.shape[1] else cv2.INTER_LINEAR
    img = cv2.resize(img, (w, h), interpolation=interp)
    if rotate180:
        img = cv2.rotate(img, cv2.ROTATE_180)
    if not bgr:
        img = img[:, :, ::-1]
    x = (img.astype(np.float32) - mean) * np.float32(scale)
    x = x.transpose(2, 0, 1) if layout == "nchw" else x
    return np.ascontiguousarray(x[None], dtype=np.float32)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("image", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--size", type=parse_size, required=True, metavar="HxW")
    parser.add_argument("--bgr", action="store_true", help="keep OpenCV's BGR order")
    parser.add_argument("--mean", type=parse_mean, default=np.zeros(3, np.float32))
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--layout", choices=("nchw", "nhwc"), default="nchw")
    parser.add_argument("--rotate180", action="store_true")
    args = parser.parse_args()
    try:
        x = convert(args.image, args.size, args.bgr, args.mean, args.scale, args.layout,
                    args.rotate180)
    except ValueError as e:
        print(f"image_to_npy: error: {e}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    with open(tmp, "wb") as f:
        np.save(f, x, allow_pickle=False)
    os.replace(tmp, args.out)
    print(f"{args.out}: {list(x.shape)} float32, range [{x.min():.3g}, {x.max():.3g}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
