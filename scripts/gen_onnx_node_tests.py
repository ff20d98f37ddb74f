#!/usr/bin/env python3
"""Rebuild the ONNX backend node conformance tests nnac's importer is checked against.

The onnx wheel ships the generators of its node tests, not the data. This script runs
`onnx.backend.test.case.node.collect_testcases()` (offline, numpy seeded, so the output
is deterministic) and writes every case whose main operator is one of OPS, plus the
`pytorch-converted` and `pytorch-operator` cases of the wheel (opset 6, with data) that
use any of OPS, to $ROOT/.cache/onnx-node-tests:

    <test_name>/model.onnx
    <test_name>/test_data_set_0/input_<i>.pb    TensorProto, as ONNX's own tooling writes
    <test_name>/test_data_set_0/output_<i>.pb
    <test_name>/test_data_set_0/input_<i>.npy   the same tensors as .npy (their own dtype),
    <test_name>/test_data_set_0/output_<i>.npy  when numpy can hold the dtype (not for
                                                bfloat16/float8/float4/int4/strings)
    index.tsv    one line per case, sorted by name (columns in its header line)
    index.json   the same as a JSON list
    .stamp       inputs of the generation (script hash, onnx and numpy versions)

The main operator of a node test is the op of its single node; an `_expanded` test
(the function body of an op, as several nodes) takes the main op of the test it expands.
Cases of other operators are not written. Idempotent: a run with an up-to-date stamp does
nothing. Usage: gen_onnx_node_tests.py [--out DIR] [--force]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / ".cache" / "onnx-node-tests"
ONNX_VERSION = "1.23.2"
SEED = 0

OPS = frozenset("""
Conv ConvTranspose Gemm MatMul BatchNormalization Relu LeakyRelu PRelu Clip Sigmoid
Tanh HardSigmoid HardSwish Add Sub Mul Div Sum Concat MaxPool AveragePool
GlobalAveragePool GlobalMaxPool Flatten Reshape Transpose Squeeze Unsqueeze Softmax
Resize Upsample Pad LRN Dropout Identity Constant ConstantOfShape Shape Gather Slice Split
Cast SpaceToDepth DepthToSpace
QuantizeLinear DequantizeLinear QLinearConv QLinearMatMul ConvInteger MatMulInteger
""".split())

# Ops whose node tests ONNX generates only at the newest opset (beyond what ONNX
# Runtime and nnac run) although their semantics are unchanged since opset 13 (the
# int8/uint8 forms of the quantization ops; SpaceToDepth and DepthToSpace but for
# SpaceToDepth's `mode`, new in opset 28): each such case is also written at
# DOWNGRADE_OPSET as `<name>_opset21` when the ONNX checker accepts it there.
DOWNGRADE_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "SpaceToDepth", "DepthToSpace"})
DOWNGRADE_OPSET = 21

PYTORCH_DIRS = ("pytorch-converted", "pytorch-operator")
TSV_COLUMNS = ("name", "source", "main_op", "opset", "ops", "inputs", "outputs", "npy",
               "rtol", "atol")


def graph_ops(graph) -> set[str]:
    """Op types of a graph and of its subgraphs (If/Loop/Scan bodies)."""
    ops = set()
    for node in graph.node:
        ops.add(node.op_type)
        for attr in node.attribute:
            if attr.HasField("g"):
                ops |= graph_ops(attr.g)
            for sub in attr.graphs:
                ops |= graph_ops(sub)
    return ops


def default_opset(model) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    return 0


def npy_compatible(arr) -> bool:
    import numpy as np
    return isinstance(arr, np.ndarray) and arr.dtype.kind in "biuf" and \
        arr.dtype.type.__module__ == "numpy"


def write_tensor(dir_: Path, stem: str, value, value_info) -> bool:
    """Writes <stem>.pb (and <stem>.npy when possible). Returns whether .npy was written."""
    import numpy as np
    from onnx import TensorProto, numpy_helper
    if isinstance(value, TensorProto):
        proto = value
        arr = numpy_helper.to_array(value)
    else:
        arr = np.asarray(value)
        proto = numpy_helper.from_array(arr, value_info.name)
    (dir_ / f"{stem}.pb").write_bytes(proto.SerializeToString())
    if npy_compatible(arr):
        np.save(dir_ / f"{stem}.npy", arr, allow_pickle=False)
        return True
    return False


def node_main_op(case, main_ops: dict[str, str]) -> str | None:
    nodes = case.model.graph.node
    if len(nodes) == 1:
        return nodes[0].op_type
    if "_expanded" in case.name:
        return main_ops.get(case.name.split("_expanded")[0])
    return None


def downgraded(case):
    """The case at DOWNGRADE_OPSET (a copy named `<name>_opset21`), or None when the
    checker refuses it there."""
    import copy
    import onnx
    model = copy.deepcopy(case.model)
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            imp.version = DOWNGRADE_OPSET
    model.ir_version = min(model.ir_version, 10)
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception:  # noqa: BLE001 - any checker failure means "not valid there"
        return None
    new = copy.copy(case)
    new.name = f"{case.name}_opset{DOWNGRADE_OPSET}"
    new.model = model
    return new


def write_node_case(out: Path, case, main_op: str) -> dict:
    case_dir = out / case.name
    data_dir = case_dir / "test_data_set_0"
    data_dir.mkdir(parents=True)
    model = case.model
    (case_dir / "model.onnx").write_bytes(model.SerializeToString())
    inputs, outputs = case.data_sets[0]
    npy = True
    for i, value in enumerate(inputs):
        npy &= write_tensor(data_dir, f"input_{i}", value, model.graph.input[i])
    for i, value in enumerate(outputs):
        npy &= write_tensor(data_dir, f"output_{i}", value, model.graph.output[i])
    return index_row(case.name, "node", main_op, model, len(inputs), len(outputs), npy,
                     case.rtol, case.atol)


def index_row(name, source, main_op, model, n_in, n_out, npy, rtol, atol) -> dict:
    return {"name": name, "source": source, "main_op": main_op,
            "opset": default_opset(model), "ops": sorted(graph_ops(model.graph)),
            "inputs": n_in, "outputs": n_out, "npy": npy, "rtol": rtol, "atol": atol}


def node_cases(out: Path) -> list[dict]:
    import numpy as np
    from onnx.backend.test.case.node import collect_testcases
    np.random.seed(SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    main_ops = {}
    for case in cases:
        if len(case.model.graph.node) == 1:
            main_ops[case.name] = case.model.graph.node[0].op_type
    rows = []
    for case in sorted(cases, key=lambda c: c.name):
        op = node_main_op(case, main_ops)
        if op in OPS and case.data_sets:
            rows.append(write_node_case(out, case, op))
            if op in DOWNGRADE_OPS and default_opset(case.model) > DOWNGRADE_OPSET:
                low = downgraded(case)
                if low is not None:
                    rows.append(write_node_case(out, low, op))
    return rows


def copy_pytorch_case(src: Path, out: Path, source: str) -> dict | None:
    import onnx
    from onnx import TensorProto, numpy_helper
    import numpy as np
    data_src = src / "test_data_set_0"
    if not (src / "model.onnx").is_file() or not data_src.is_dir():
        return None
    model = onnx.load(src / "model.onnx")
    ops = graph_ops(model.graph)
    if not ops & OPS:
        return None
    dst = out / src.name
    shutil.copytree(src, dst)
    npy = True
    counts = {"input": 0, "output": 0}
    for pb in sorted((dst / "test_data_set_0").glob("*.pb")):
        tensor = TensorProto()
        tensor.ParseFromString(pb.read_bytes())
        arr = numpy_helper.to_array(tensor)
        counts[pb.stem.split("_")[0]] += 1
        if npy_compatible(arr):
            np.save(pb.with_suffix(".npy"), arr, allow_pickle=False)
        else:
            npy = False
    main = sorted(ops & OPS)[0] if len(ops & OPS) == 1 else "+".join(sorted(ops & OPS))
    return index_row(src.name, source, main, model, counts["input"], counts["output"],
                     npy, 1e-3, 1e-7)


def pytorch_cases(out: Path) -> list[dict]:
    import onnx
    data_root = Path(onnx.__file__).parent / "backend" / "test" / "data"
    rows = []
    for source in PYTORCH_DIRS:
        for src in sorted((data_root / source).iterdir()):
            row = copy_pytorch_case(src, out, source)
            if row is not None:
                rows.append(row)
    return rows


def write_index(out: Path, rows: list[dict]) -> None:
    rows = sorted(rows, key=lambda r: r["name"])
    (out / "index.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = ["\t".join(TSV_COLUMNS)]
    for r in rows:
        cells = dict(r, ops=",".join(r["ops"]), npy="yes" if r["npy"] else "no")
        lines.append("\t".join(str(cells[c]) for c in TSV_COLUMNS))
    (out / "index.tsv").write_text("\n".join(lines) + "\n")


def stamp_text() -> str:
    import numpy as np
    import onnx
    script = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    return f"script={script}\nonnx={onnx.__version__}\nnumpy={np.__version__}\nseed={SEED}\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--force", action="store_true", help="regenerate even if up to date")
    args = parser.parse_args()
    import onnx
    if onnx.__version__ != ONNX_VERSION:
        print(f"gen_onnx_node_tests: error: onnx {onnx.__version__} installed, "
              f"{ONNX_VERSION} expected (run scripts/setup.sh)", file=sys.stderr)
        return 1
    out = args.out
    stamp = stamp_text()
    stamp_file = out / ".stamp"
    if not args.force and stamp_file.is_file() and stamp_file.read_text() == stamp \
            and (out / "index.tsv").is_file():
        count = len((out / "index.tsv").read_text().splitlines()) - 1
        print(f"gen_onnx_node_tests: up to date, {count} cases in {out}")
        return 0
    t0 = time.monotonic()
    tmp = out.with_name(out.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    rows = node_cases(tmp) + pytorch_cases(tmp)
    write_index(tmp, rows)
    (tmp / ".stamp").write_text(stamp)
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
    by_source = {}
    for r in rows:
        by_source[r["source"]] = by_source.get(r["source"], 0) + 1
    print(f"gen_onnx_node_tests: wrote {len(rows)} cases {by_source} to {out} "
          f"({time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
