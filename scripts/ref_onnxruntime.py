#!/usr/bin/env python3
"""Run an ONNX model with ONNX Runtime (CPU, 2 threads): the float reference for ONNX.

Usage: ref_onnxruntime.py MODEL OUTDIR --input NAME=FILE.npy [--input ...]
Writes every graph output as OUTDIR/<output name>.npy (float32; '/' and other characters
that cannot be in a file name become '_'). An input that is not given is an error naming
it; an .npy whose shape or dtype does not fit is an error too (ONNX Runtime's message).
Exit status: 0 ok, 1 bad arguments or input, 2 ONNX Runtime failure.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in scripts/ for the shared helper
from _npy_io import output_file_name, parse_named_inputs, write_outputs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    args = parser.parse_args()
    try:
        feeds = parse_named_inputs(args.input)
    except ValueError as e:
        parser.error(str(e))
    if not args.model.is_file():
        print(f"ref_onnxruntime: error: model {args.model} not found", file=sys.stderr)
        return 1
    import onnxruntime as ort
    from _ort_exact import session as exact_session
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    try:
        sess = exact_session(args.model, opts)
    except Exception as e:  # ORT raises its own exception types
        print(f"ref_onnxruntime: error: cannot load {args.model}: {e}", file=sys.stderr)
        return 2
    wanted = [i.name for i in sess.get_inputs()]
    missing = [n for n in wanted if n not in feeds]
    extra = [n for n in feeds if n not in wanted]
    if missing or extra:
        print(f"ref_onnxruntime: error: model inputs are {wanted}; missing {missing}, "
              f"unknown {extra}", file=sys.stderr)
        return 1
    try:
        results = sess.run(None, feeds)
    except Exception as e:
        print(f"ref_onnxruntime: error: run failed: {e}", file=sys.stderr)
        return 2
    names = [o.name for o in sess.get_outputs()]
    write_outputs(args.outdir, dict(zip(names, (np.asarray(r) for r in results))))
    for name, r in zip(names, results):
        print(f"{name}: {list(np.shape(r))} -> {args.outdir / output_file_name(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
