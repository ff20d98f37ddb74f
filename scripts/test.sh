#!/usr/bin/env bash
# The full test suite, on a fresh machine: prepares the Python reference tools and
# the real models (scripts/setup.sh, idempotent), then runs every Rust test.
# This is the exact command README.md gives and .ci/run calls.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup.sh

# Ray, optional for users, is needed by tests/tune_ray.rs (a search on a local Ray
# head): installed here, pinned, next to the pinned reference tools.
.venv/bin/python -m pip install -q -r scripts/requirements-ray.txt -c scripts/requirements.txt

# Release profile: the reference interpreters run real models (ResNet-50, open_nsfw)
# in the suite, which is far too slow unoptimised.
cargo test --workspace --release --locked --no-fail-fast

# The Python package (crates/python, `import nnac`): built in release by maturin and
# installed into the venv, then its pytest suite (seconds; it compares the package with
# the CLI binary the Rust tests built, target/release/nnac).
VIRTUAL_ENV="$ROOT/.venv" "$ROOT/.venv/bin/maturin" develop --release --locked \
    -m crates/python/Cargo.toml
"$ROOT/.venv/bin/python" -m pytest -q crates/python/tests

# The API docs build without a warning, private items included (the crates' module
# docs are code maps that link them): broken or ambiguous intra-doc links fail here.
# In the release profile, so the proc macros and build scripts the tests compiled are
# reused (the dev profile builds dependencies at opt-level 2).
RUSTDOCFLAGS="-D warnings" cargo doc --release --workspace --no-deps --document-private-items --locked
