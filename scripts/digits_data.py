#!/usr/bin/env python3
"""The handwritten-digits data set of the QAT model (models/qat_digits.onnx), as
scikit-learn ships it (sklearn/datasets/data/digits.csv.gz: 1797 rows of 64 pixels in
0..16 and the label), fetched into .cache/models/digits by scripts/fetch_models.py.

One fixed split, no randomness: the file cycles through the ten digits, so it is cut
into blocks of ten consecutive samples and every fifth block is held out (sample i iff
(i // 10) % 5 == 0: 360 samples, every digit about 36 times), the other 1437 train. Pixels are scaled to [0, 1] (x / 16), images 1x1x8x8.

Used by models/train_qat_digits.py (training) and by tests/qat_digits.rs:

    digits_data.py OUT_DIR    writes heldout_x.npy (360x1x1x8x8 float32),
                              heldout_y.npy (360 int64), calib_x.npy (the first 64
                              training images, 64x1x1x8x8 float32: post-training
                              calibration of the float model)
"""
import gzip
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / ".cache" / "models" / "digits" / "digits.csv.gz"
CALIB = 64


def load():
    """(x, y): all 1797 images as N x 1 x 8 x 8 float32 in [0, 1], labels int64."""
    if not DATA.is_file():
        sys.exit(f"{DATA} is missing: run scripts/fetch_models.py (scripts/setup.sh) first")
    with gzip.open(DATA, "rt") as f:
        rows = np.loadtxt(f, delimiter=",", dtype=np.float64)
    x = (rows[:, :64] / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = rows[:, 64].astype(np.int64)
    return x, y


def split():
    """(train_x, train_y, heldout_x, heldout_y): held out iff (index // 10) % 5 == 0."""
    x, y = load()
    held = (np.arange(len(x)) // 10) % 5 == 0
    return x[~held], y[~held], x[held], y[held]


def main_to(out):
    """Writes the held-out images and labels and the calibration images into `out`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tx, _, hx, hy = split()
    np.save(out / "heldout_x.npy", hx[:, None])
    np.save(out / "heldout_y.npy", hy)
    np.save(out / "calib_x.npy", tx[:CALIB, None])


if __name__ == "__main__":
    main_to(sys.argv[1])
