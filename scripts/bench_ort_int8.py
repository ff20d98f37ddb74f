#!/usr/bin/env python3
"""Time ONNX Runtime on a model quantized to int8 (the simulator speed reference).

Usage: bench_ort_int8.py MODEL FRAME.npy [--runs N] [--threads T] [--workdir DIR]

Quantizes MODEL statically with onnxruntime.quantization.quantize_static (after
converting it to opset 13 if older and ONNX Runtime's pre-processing; QDQ format,
uint8 activations and int8 per-channel weights -- ONNX Runtime's fastest 8-bit
configuration on x86-64 without VNNI, measured 1.7x faster here than int8
activations -- min/max calibration on FRAME.npy, the same frame the simulator
benchmark runs), then runs the quantized model RUNS times on FRAME.npy with T
intra-op threads (default 2) after one warm-up run. The quantized
model is cached in DIR (default: next to this script under .cache/bench) by the
model's size and modification time.

Prints one JSON line: {"median_ms": ..., "best_ms": ..., "cpu_ms": ..., "runs": N,
"threads": T, "model": "..."} (cpu_ms: this process's CPU time per timed run, all
threads). Exit status: 0 ok, 1 bad arguments, 2 ONNX Runtime failure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def quantized_model(model: Path, frame: np.ndarray, workdir: Path) -> Path:
    """The int8 QDQ model of `model`, calibrated on `frame` (cached)."""
    import onnx
    import onnx.version_converter
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    st = model.stat()
    out = workdir / f"{model.stem}.{st.st_size}.{int(st.st_mtime)}.u8s8.onnx"
    if out.is_file():
        return out
    workdir.mkdir(parents=True, exist_ok=True)
    input_name = onnx.load(str(model), load_external_data=False).graph.input[0].name

    class OneFrame(CalibrationDataReader):
        def __init__(self) -> None:
            self.left = [{input_name: frame}]

        def get_next(self):
            return self.left.pop() if self.left else None

    # Per-channel QDQ needs opset >= 13 (DequantizeLinear's axis); zoo models are older.
    m = onnx.load(str(model))
    if max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")) < 13:
        m = onnx.version_converter.convert_version(m, 13)
    src = workdir / f"{model.stem}.opset13.onnx"
    onnx.save(m, str(src))
    pre = workdir / f"{model.stem}.pre.onnx"
    quant_pre_process(str(src), str(pre), skip_symbolic_shape=True)
    src.unlink(missing_ok=True)
    quantize_static(
        str(pre),
        str(out),
        OneFrame(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        per_channel=True,
    )
    pre.unlink(missing_ok=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("frame", type=Path)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--workdir", type=Path, default=Path(__file__).resolve().parent.parent / ".cache" / "bench"
    )
    args = parser.parse_args()
    if not args.model.is_file() or not args.frame.is_file():
        print("bench_ort_int8: error: model or frame not found", file=sys.stderr)
        return 1
    if args.runs < 1 or args.threads < 1:
        parser.error("--runs and --threads must be at least 1")
    frame = np.load(args.frame, allow_pickle=False).astype(np.float32)
    import onnxruntime as ort

    try:
        qmodel = quantized_model(args.model, frame, args.workdir)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = args.threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.log_severity_level = 3
        sess = ort.InferenceSession(str(qmodel), opts, providers=["CPUExecutionProvider"])
        feed = {sess.get_inputs()[0].name: frame}
        sess.run(None, feed)  # warm-up
        times = []
        cpu0 = time.process_time()
        for _ in range(args.runs):
            t = time.perf_counter()
            sess.run(None, feed)
            times.append((time.perf_counter() - t) * 1e3)
        cpu_ms = (time.process_time() - cpu0) * 1e3 / args.runs
    except Exception as e:  # ONNX Runtime raises many exception types
        print(f"bench_ort_int8: error: {e}", file=sys.stderr)
        return 2
    print(
        json.dumps(
            {
                "median_ms": statistics.median(times),
                "best_ms": min(times),
                "cpu_ms": cpu_ms,
                "runs": args.runs,
                "threads": args.threads,
                "model": str(qmodel),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
