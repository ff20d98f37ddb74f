"""ONNX Runtime sessions whose int8 results are the model's arithmetic on every x86-64
CPU, for the scripts whose ONNX Runtime outputs are references.

ONNX Runtime multiplies uint8 activations by int8 weights (U8S8, what quantize_static
makes by default) with `vpmaddubsw` on x86-64 CPUs without VNNI (SSE4.1, AVX2, AVX-512
without VNNI): it adds two products into 16 bits with saturation, so its outputs there
depend on the CPU (measured on an AMD EPYC with AVX2: 7% of the QAT digits model's
output codes equal to those of a VNNI machine, up to 42 codes apart). The session option
`session.x64quantprecision` makes it multiply exactly (U8U8 kernels) wherever U8S8 could
saturate; with VNNI the results are exact either way. Its weight rewrite in ONNX Runtime
1.31 fails on an initializer that several QuantizeLinear / DequantizeLinear nodes share
("Attempt to replace the existing tensor"), so each such node first gets a copy of its
own, and a DequantizeLinear with several consumers first becomes one per consumer (as
ONNX Runtime's own EnsureUniqueDQForNodeUnit makes it, whose copies would share the
initializers): same values, the model's arithmetic is unchanged.
`scripts/bench_ort_int8.py` does not use any of this: it times ONNX Runtime as users
run it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import onnxruntime as ort


def exact_int8(opts: ort.SessionOptions | None = None) -> ort.SessionOptions:
    """`opts` (or new options) with ONNX Runtime's exact int8 matrix multiplies."""
    opts = opts if opts is not None else ort.SessionOptions()
    opts.add_session_config_entry("session.x64quantprecision", "1")
    return opts


def own_initializers(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with every QuantizeLinear / DequantizeLinear reading its inputs (values,
    scale, zero point) from initializers of its own: a shared one (directly or through
    Identity nodes) is copied under a new name."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    unique_dequantize_per_consumer(m.graph)
    inits = {i.name: i for i in m.graph.initializer}
    alias = {n.output[0]: n.input[0] for n in m.graph.node if n.op_type == "Identity"}
    uses: dict[str, int] = {}
    for n in m.graph.node:
        for name in n.input:
            uses[name] = uses.get(name, 0) + 1
    for n in m.graph.node:
        if n.op_type not in ("QuantizeLinear", "DequantizeLinear"):
            continue
        for k in range(3):
            if k >= len(n.input) or not n.input[k]:
                continue
            src = n.input[k]
            while src in alias:
                src = alias[src]
            if src not in inits or (src == n.input[k] and uses[src] == 1):
                continue
            copy = onnx.TensorProto()
            copy.CopyFrom(inits[src])
            copy.name = f"{n.output[0]}/input{k}"
            m.graph.initializer.append(copy)
            n.input[k] = copy.name
    return m


def unique_dequantize_per_consumer(graph: onnx.GraphProto) -> None:
    """Gives every consumer of a DequantizeLinear node with several consumers a copy of
    that node (what ONNX Runtime's EnsureUniqueDQForNodeUnit does itself, but before
    `own_initializers` runs, so that each copy then gets initializers of its own)."""
    outputs = {o.name for o in graph.output}
    consumers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for n in graph.node:
        for k, name in enumerate(n.input):
            consumers.setdefault(name, []).append((n, k))
    nodes = []
    for n in graph.node:
        nodes.append(n)
        uses = consumers.get(n.output[0], []) if n.output else []
        if n.op_type != "DequantizeLinear" or n.output[0] in outputs or len(uses) < 2:
            continue
        for i, (user, k) in enumerate(uses[1:], start=1):
            copy = onnx.NodeProto()
            copy.CopyFrom(n)
            copy.name = f"{n.name}/consumer{i}"
            copy.output[0] = f"{n.output[0]}/consumer{i}"
            user.input[k] = copy.output[0]
            nodes.append(copy)
    del graph.node[:]
    graph.node.extend(nodes)


def session(model: str | Path, opts: ort.SessionOptions | None = None) -> ort.InferenceSession:
    """A CPU session of the model file with exact int8 matrix multiplies. Where ONNX
    Runtime cannot build one (none of make_qdq_models.py's models, measured), the
    default session, with a warning: on a CPU with VNNI that is exact too."""
    providers = ["CPUExecutionProvider"]
    exact = own_initializers(onnx.load(str(model))).SerializeToString()
    plain = opts if opts is not None else ort.SessionOptions()
    precise = ort.SessionOptions()
    precise.intra_op_num_threads = plain.intra_op_num_threads
    precise.log_severity_level = 4  # the failure is reported below, once
    try:
        return ort.InferenceSession(exact, exact_int8(precise), providers=providers)
    except Exception as e:  # ONNX Runtime raises its own exception types
        print(f"_ort_exact: {model}: no exact int8 session ({str(e).splitlines()[0][:120]}); "
              "ONNX Runtime's default kernels (they may saturate on a CPU without VNNI)",
              file=sys.stderr)
        return ort.InferenceSession(str(model), plain, providers=providers)
