"""Shared helpers of the reference-runtime scripts: .npy inputs and outputs."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np


def output_file_name(tensor_name: str) -> str:
    """File name for a tensor: characters outside [A-Za-z0-9._-] become '_'."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", tensor_name) + ".npy"


def load_npy(path: str) -> np.ndarray:
    if not Path(path).is_file():
        raise ValueError(f"input file {path} not found")
    return np.load(path, allow_pickle=False)


def parse_named_inputs(specs: list[str]) -> dict[str, np.ndarray]:
    feeds = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--input {spec!r}: expected NAME=FILE.npy")
        feeds[name] = load_npy(path)
    return feeds


def write_outputs(outdir: Path, outputs: dict[str, np.ndarray]) -> None:
    """Writes each output as float32 .npy, atomically (no partial file on failure)."""
    outdir.mkdir(parents=True, exist_ok=True)
    for name, value in outputs.items():
        path = outdir / output_file_name(name)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            np.save(f, np.asarray(value, dtype=np.float32), allow_pickle=False)
        os.replace(tmp, path)
