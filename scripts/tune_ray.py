#!/usr/bin/env python3
"""Run an `nnac tune` search with its exact evaluations as tasks on a Ray cluster.

The search is split into N shards (`nnac tune ... --shard K/N`): every shard runs the
same deterministic analytical search and evaluates exactly (compile + cycle model)
its share of the points; this driver submits one Ray task per shard, collects the
shards' results.json and joins them with `nnac tune merge`. The merged results are
identical to a local run of the same search (`--jobs 1`), wall-clock figures aside.

    .venv/bin/python scripts/tune_ray.py --address 127.0.0.1:6379 --shards 4 \\
        -o /tmp/tune-ray -- --model .cache/models/light/resnet50.onnx \\
        --random-calib 1 --space crates/tune/spaces/fig8.toml --tuner exhaustive --budget 49

`--address` is anything `ray.init` accepts: `ray://HOST:10001` for a remote cluster
(Ray Client), `HOST:6379` for a cluster this machine belongs to (e.g. a local
`ray start --head --node-ip-address 127.0.0.1`). Every worker must see the nnac
binary and the model files at the same paths (a shared file system, or the same
checkout on every node). Ray is optional: pip install -r scripts/requirements-ray.txt.
"""

import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--address", required=True, help="Ray cluster address (ray://HOST:PORT or HOST:PORT)")
    ap.add_argument("--shards", type=int, required=True, help="number of Ray tasks (shards)")
    ap.add_argument("--nnac", default=os.path.join(ROOT, "target", "release", "nnac"), help="nnac binary")
    ap.add_argument("--jobs", type=int, default=1, help="threads per task (nnac tune --jobs)")
    ap.add_argument("-o", "--output", required=True, help="output directory of the merged run")
    ap.add_argument("tune_args", nargs=argparse.REMAINDER, help="-- then the arguments of nnac tune")
    a = ap.parse_args()
    args = [x for x in a.tune_args if x != "--"] if a.tune_args[:1] == ["--"] else a.tune_args
    if a.shards < 1:
        print("error: --shards must be at least 1", file=sys.stderr)
        return 1
    for forbidden in ("--shard", "-o", "--output", "--jobs", "--resume"):
        if forbidden in args:
            print(f"error: {forbidden} is set by the driver; leave it out of the nnac tune arguments", file=sys.stderr)
            return 1
    try:
        import ray
    except ImportError:
        print("error: Ray is not installed: pip install -r scripts/requirements-ray.txt", file=sys.stderr)
        return 1

    nnac = os.path.abspath(a.nnac)
    cwd = os.getcwd()

    @ray.remote(num_cpus=a.jobs)
    def shard(k: int) -> tuple:
        with tempfile.TemporaryDirectory(prefix=f"nnac-tune-shard{k}-") as d:
            cmd = [nnac, "tune", *args, "--shard", f"{k}/{a.shards}", "--jobs", str(a.jobs), "-q", "-o", d]
            p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
            if p.returncode != 0:
                return (k, p.returncode, p.stderr)
            with open(os.path.join(d, "results.json")) as f:
                return (k, 0, f.read())

    ray.init(address=a.address, logging_level="ERROR", log_to_driver=False)
    try:
        results = ray.get([shard.remote(k) for k in range(a.shards)])
    finally:
        ray.shutdown()
    shard_dir = os.path.join(a.output, "shards")
    os.makedirs(shard_dir, exist_ok=True)
    files = []
    for k, code, text in sorted(results):
        if code != 0:
            print(f"error: shard {k}/{a.shards} failed (exit {code}):\n{text}", file=sys.stderr)
            return code
        path = os.path.join(shard_dir, f"shard-{k}.json")
        with open(path, "w") as f:
            f.write(text)
        files.append(path)
    return subprocess.run([nnac, "tune", "merge", *files, "-o", a.output]).returncode


if __name__ == "__main__":
    sys.exit(main())
