#!/usr/bin/env python3
"""Run a Caffe model with OpenCV 4's importer (cv2.dnn.readNetFromCaffe): the independent
float reference for nnac's Caffe front end.

Usage: ref_opencv_caffe.py PROTOTXT CAFFEMODEL OUTDIR --input FILE.npy [--input-name NAME]
                           [--output-layer NAME ...]
The input is a float32 NCHW array (batch 1), e.g. from scripts/image_to_npy.py. Without
--output-layer the network's unconnected outputs are written; each as
OUTDIR/<layer name>.npy (float32). Exit status: 0 ok, 1 bad arguments, 2 OpenCV failure.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in scripts/ for the shared helper
from _npy_io import load_npy, output_file_name, write_outputs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prototxt", type=Path)
    parser.add_argument("caffemodel", type=Path)
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--input", required=True, metavar="FILE.npy")
    parser.add_argument("--input-name", default="",
                        help="input blob name (default: the network's only input)")
    parser.add_argument("--output-layer", action="append", default=[], metavar="NAME")
    args = parser.parse_args()
    for path in (args.prototxt, args.caffemodel):
        if not path.is_file():
            print(f"ref_opencv_caffe: error: {path} not found", file=sys.stderr)
            return 1
    try:
        x = load_npy(args.input).astype(np.float32)
    except ValueError as e:
        print(f"ref_opencv_caffe: error: {e}", file=sys.stderr)
        return 1
    import cv2
    cv2.setNumThreads(2)
    try:
        net = cv2.dnn.readNetFromCaffe(str(args.prototxt), str(args.caffemodel))
        net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
        net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
        net.setInput(x, args.input_name)
        names = args.output_layer or list(net.getUnconnectedOutLayersNames())
        results = net.forward(names)
    except cv2.error as e:
        print(f"ref_opencv_caffe: error: OpenCV failed: {e}", file=sys.stderr)
        return 2
    write_outputs(args.outdir, dict(zip(names, results)))
    for name, r in zip(names, results):
        print(f"{name}: {list(r.shape)} -> {args.outdir / output_file_name(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
