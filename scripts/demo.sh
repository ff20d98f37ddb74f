#!/usr/bin/env bash
# The main job, on a fresh machine: build nnac, compile the bundled CNN
# (models/tiny_cnn.onnx) to an NNA program calibrated on real photographs, check the
# program statically, run it on the bit-exact simulator on a different real photo,
# and compare with the float reference interpreter.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup.sh
cargo build --release --locked --quiet
NNAC="${CARGO_TARGET_DIR:-$ROOT/target}/release/nnac"
OUT="$ROOT/target/demo"
IMG="$ROOT/.cache/models/images"
rm -rf "$OUT" && mkdir -p "$OUT/calib"
cp "$IMG/coffee.png" "$IMG/chelsea.png" "$IMG/coins.png" "$IMG/horse.png" "$OUT/calib/"
PRE=(--mean 123.7,116.3,103.5 --scale 0.0171)

echo "== compile (calibration: 4 photographs) =="
"$NNAC" compile models/tiny_cnn.onnx --calib "$OUT/calib" "${PRE[@]}" \
    -o "$OUT/tiny_cnn.nnab" --quant-report "$OUT/quant.json"

echo; echo "== verify (static race / deadlock check) =="
"$NNAC" verify "$OUT/tiny_cnn.nnab"

echo; echo "== disassembly (first lines) =="
"$NNAC" disasm "$OUT/tiny_cnn.nnab" | head -n 12

"$ROOT/.venv/bin/python" scripts/image_to_npy.py "$IMG/astronaut.png" "$OUT/astronaut.npy" --size 64x64 \
    --mean 123.7,116.3,103.5 --scale 0.0171 >/dev/null

echo; echo "== run on the simulator: astronaut.png =="
"$NNAC" run "$OUT/tiny_cnn.nnab" --input "image=$OUT/astronaut.npy" --output-dir "$OUT/sim"

echo; echo "== float reference on the same input =="
"$NNAC" eval models/tiny_cnn.onnx --input "image=$OUT/astronaut.npy" --output-dir "$OUT/float"

"$ROOT/.venv/bin/python" - "$OUT" <<'PY'
import sys, numpy as np
out = sys.argv[1]
q = np.load(f"{out}/sim/logits.npy").ravel(); f = np.load(f"{out}/float/logits.npy").ravel()
sqnr = 10 * np.log10((f ** 2).sum() / max(((f - q) ** 2).sum(), 1e-30))
print(f"\nint8 on the NNA simulator: class {q.argmax()}  |  float reference: class {f.argmax()}  |  SQNR {sqnr:.1f} dB")
PY
