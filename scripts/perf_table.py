#!/usr/bin/env python3
"""Compiles and profiles the light and mobile models and prints docs/PERFORMANCE.md section 7's tables.

Usage: perf_table.py [--nnac PATH] [--out DIR] [--models a,b,...] [--calib IMAGE]
                     [--profile-arg ARG ...]

For every model: `nnac compile .cache/models/{light,arch}/MODEL.onnx --calib IMAGE -o
DIR/MODEL.nnab --quiet`, then `nnac profile DIR/MODEL.nnab --json [ARGS]`, keeping the JSON
in DIR/MODEL.json. Prints one markdown row per model from the JSON alone (the fields of
PERFORMANCE.md section 5), so the table is reproducible. Cycles, the schedule floor and the
cause columns are per frame (the body); the DRAM column is the prologue's traffic (weights loaded once, when
resident) plus one frame's, against the lower bound (DRAM image + inputs + outputs). Needs scripts/setup.sh's cache
and a built nnac (`cargo build --release --bin nnac`). Exits non-zero if a model fails.
A second table gives every model's hardware bound (section 3.1): the fewest cycles any
program could take for its work, the unit that sets it, and the work on each unit.
The mobile models (scripts/make_arch_models.py) are in `.cache/models/arch`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["resnet50", "inception_v1", "inception_v2", "squeezenet", "densenet121",
          "shufflenet", "bvlc_alexnet", "zfnet512", "vgg19"]
# torchvision's mobile networks built by scripts/make_arch_models.py (issue 24).
ARCH_MODELS = ["mobilenet_v2", "efficientnet_b0", "mobilenet_v3_large"]
CAUSES = ["mac_busy", "dma", "flags", "sram_ports", "simd_unload", "simd_work"]
HEADER = ("| model | cycles | ms | frames/s | GMACs | MAC util | shape bound | util / bound "
          "| floor | best order / bound "
          "| DRAM (prologue + one frame) / lower bound | SRAM peak | host ops | MAC busy | DMA | flags "
          "| SRAM ports | SIMD unload | SIMD-only work |")


HW_HEADER = ("| model | cycles | hardware bound (cycles) | set by | hw bound | MAC util "
             "| util / hw bound | MAC terms | unloads | SIMD-only | DRAM (I/O) | shift register |")


def hw_row(model: str, d: dict) -> str:
    """The hardware bound (section 3.1) of one model's profile."""
    w, hb, util = d["hw_work"], d.get("hardware_bound"), d["mac_utilization"]
    cells = [
        model,
        f"{d['total_cycles']:,}",
        f"{d['hw_bound_cycles']:,}",
        w["limit"],
        f"{100 * hb:.1f}%" if hb else "-",
        f"{100 * util:.1f}%",
        f"{100 * util / hb:.0f}%" if hb else "-",
    ] + [f"{w[k]:,}" for k in ("mac", "unload", "simd_only", "dram", "shift_register")]
    return "| " + " | ".join(cells) + " |"


def model_path(m: str) -> Path:
    light = ROOT / ".cache/models/light" / f"{m}.onnx"
    return light if light.is_file() or m not in ARCH_MODELS else ROOT / ".cache/models/arch" / f"{m}.onnx"


def row(model: str, d: dict) -> str:
    cyc = d["total_cycles"]
    dram = d["dram_bytes"]
    frame = dram["read"] + dram["written"]
    pro = d.get("prologue") or {}
    pro_bytes = sum(pro.get("dram_bytes", {}).values()) if pro else 0
    moved = frame + pro_bytes
    bound = d.get("shape_bound")
    util = d["mac_utilization"]
    causes = d["cycles_by_cause"]
    # The layers' fewest MAC cycles (the shape bound's) over the schedule floor: the
    # most of the shape bound any order of these instructions reaches (section 2.1).
    min_cycles = sum(layer["min_cycles"] for layer in d["layers"])
    pct = [f"{100.0 * causes[c] / cyc:.0f}%" if cyc else "-" for c in CAUSES]
    cells = [
        model,
        f"{cyc:,}",
        f"{1e3 * d['seconds']:.3f}",
        f"{d['fps']:.0f}",
        f"{d['macs'] / 1e9:.2f}",
        f"{100 * util:.1f}%",
        f"{100 * bound:.1f}%" if bound else "-",
        f"{100 * util / bound:.0f}%" if bound else "-",
        f"{d['floor_cycles']:,}",
        f"{100 * min(1.0, min_cycles / d['floor_cycles']):.0f}%" if min_cycles and d["floor_cycles"] else "-",
        (f"{pro_bytes / 1e6:.1f} + {frame / 1e6:.2f} / " if pro else f"{frame / 1e6:.1f} / ")
        + f"{dram['lower_bound'] / 1e6:.1f} MB = {100 * moved / dram['lower_bound']:.0f}%",
        f"{d['sram_peak_bytes'] / 2**20:.1f} MiB",
        str(len(d["host_ops"])),
    ] + pct
    return "| " + " | ".join(cells) + " |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nnac", default=str(ROOT / "target/release/nnac"))
    ap.add_argument("--out", default="/tmp/nnac-perf")
    ap.add_argument("--models", default=",".join(MODELS + ARCH_MODELS))
    ap.add_argument("--calib", default=str(ROOT / ".cache/models/images/astronaut.png"))
    ap.add_argument("--profile-arg", action="append", default=[],
                    help="extra argument for nnac profile (repeatable)")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, hw_rows, failed = [], [], []
    for m in a.models.split(","):
        model = model_path(m)
        prog, js = out / f"{m}.nnab", out / f"{m}.json"
        t = time.monotonic()
        c = subprocess.run([a.nnac, "compile", str(model), "--calib", a.calib, "-o", str(prog),
                            "--quiet"], capture_output=True, text=True)
        if c.returncode != 0:
            print(f"{m}: compile failed:\n{c.stderr}", file=sys.stderr)
            failed.append(m)
            continue
        secs = time.monotonic() - t
        p = subprocess.run([a.nnac, "profile", str(prog), "--json", *a.profile_arg],
                           capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{m}: profile failed:\n{p.stderr}", file=sys.stderr)
            failed.append(m)
            continue
        js.write_text(p.stdout)
        rows.append(row(m, json.loads(p.stdout)))
        hw_rows.append(hw_row(m, json.loads(p.stdout)))
        print(f"{m}: compiled in {secs:.1f} s, profiled", file=sys.stderr)
    print(HEADER)
    print("|" + "---|" * HEADER.count(" | ") + "---|")
    print("\n".join(rows))
    print()
    print(HW_HEADER)
    print("|" + "---|" * HW_HEADER.count(" | ") + "---|")
    print("\n".join(hw_rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
