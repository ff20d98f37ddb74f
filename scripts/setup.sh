#!/usr/bin/env bash
# One command that prepares everything nnac's tests need, idempotently:
#   1. the project venv $ROOT/.venv with the pinned reference tools
#      (scripts/requirements.txt: onnx, onnxruntime, opencv-python-headless, numpy);
#   2. the real models, images and ONNX test data in $ROOT/.cache/models
#      (scripts/fetch_models.py, hashes pinned in scripts/models.lock);
#   3. the ONNX node conformance cases in $ROOT/.cache/onnx-node-tests
#      (scripts/gen_onnx_node_tests.py);
#   4. the ONNX "light" models with seeded random weights in $ROOT/.cache/models/light
#      (scripts/make_light_models.py);
#   5. seeded random .caffemodel weights for the BVLC Caffe nets in
#      $ROOT/.cache/models/caffe-random (scripts/make_caffe_models.py);
#   6. MobileNet-v2/v3-Large, EfficientNet-B0 and Inception-v4 (299 and 960x1280) built
#      with onnx.helper, seeded random weights, in $ROOT/.cache/models/arch
#      (scripts/make_arch_models.py).
#   7. Graphviz `dot` (Debian package graphviz, when missing and run as root), which
#      renders `nnac compile --graph FILE.svg` (tests/cli_pictures.rs, scripts/gallery.sh).
#   8. the YOLOv8n / YOLOv5s-style detectors built with onnx.helper in
#      $ROOT/.cache/models/detectors (scripts/make_detectors.py).
# A second run does no network access and takes about a second.
# Needs python3 (3.11) with the venv module and access to PyPI on the first run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
REQ="$ROOT/scripts/requirements.txt"
STAMP="$VENV/.nnac-requirements.sha256"
PYTHON_BIN="${PYTHON:-python3}"

log() { printf 'setup: %s\n' "$*" >&2; }

req_hash() { sha256sum "$REQ" | cut -d' ' -f1; }

venv_ok() {
    [[ -x "$VENV/bin/python" ]] && [[ -f "$STAMP" ]] && [[ "$(cat "$STAMP")" == "$(req_hash)" ]] \
        && "$VENV/bin/python" -c 'import onnx, onnxruntime, cv2, numpy' 2>/dev/null
}

make_venv() {
    if ! command -v "$PYTHON_BIN" >/dev/null; then
        log "error: $PYTHON_BIN not found; install Python 3.11 (with venv) first"
        exit 1
    fi
    log "creating $VENV with the pinned packages of scripts/requirements.txt"
    rm -f "$STAMP"
    if [[ ! -x "$VENV/bin/python" ]]; then
        "$PYTHON_BIN" -m venv "$VENV"
    fi
    if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
            --no-input -r "$REQ"; then
        log "error: pip could not install scripts/requirements.txt into $VENV"
        log "       (offline? PyPI must be reachable on the first run)"
        exit 1
    fi
    req_hash >"$STAMP"
}

ensure_graphviz() {
    command -v dot >/dev/null && return 0
    if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null; then
        log "installing Graphviz (apt-get install graphviz)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null
    else
        log "warning: Graphviz dot is missing: install the graphviz package (tests/cli_pictures.rs needs it)"
    fi
}

main() {
    local t0=$SECONDS
    if venv_ok; then
        log "venv up to date ($VENV)"
    else
        make_venv
        log "venv ready in $((SECONDS - t0)) s"
    fi
    local py="$VENV/bin/python"
    "$py" "$ROOT/scripts/fetch_models.py"
    "$py" "$ROOT/scripts/gen_onnx_node_tests.py"
    "$py" "$ROOT/scripts/make_light_models.py"
    "$py" "$ROOT/scripts/make_caffe_models.py"
    "$py" "$ROOT/scripts/make_arch_models.py"
    ensure_graphviz
    "$py" "$ROOT/scripts/make_detectors.py"
    log "done in $((SECONDS - t0)) s"
}

main "$@"
