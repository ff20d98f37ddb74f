#!/usr/bin/env python3
"""Give the ONNX "light" model topologies seeded random weights.

The onnx wheel's backend/test/data/light/light_<net>.onnx (extracted by
scripts/fetch_models.py into $ROOT/.cache/models/onnx/light/) keep only the topology of
classic model-zoo networks: every large weight is a ConstantOfShape(0.02) node fed by a
shape-only int64 initializer, and the few small float initializers left (biases, batch
norm statistics) belong to the trained network, not to these weights. This script
replaces every float weight (ConstantOfShape outputs and float initializers) by a
float32 initializer drawn from a generator seeded per model, keeps the int64 shape
initializers of Reshape, drops unused initializers, and lists only the image as graph
input (IR version 4, opset 9 unchanged). It writes $ROOT/.cache/models/light/<net>.onnx.

Scales keep activations in a sane range without looking at any data: the expected
second moment of every tensor is propagated through the graph analytically (input 1,
Conv/Gemm weights He-normal so that Conv+Relu preserves it, Relu halves it, Sum adds,
...) and each BatchNormalization gets a running variance equal to the second moment
of its input (times a random factor in [0.8, 1.25], always positive) and a small random
mean, so every BN output has a second moment near gamma^2. Nothing depends on floating
point summation order, so the files are byte-identical on every machine.

Each model is then checked with onnx.checker and run once with ONNX Runtime on the
scikit-image astronaut photo; output shapes and ranges are written to
$ROOT/.cache/models/light/manifest.json. Idempotent (stamp file).
Usage: make_light_models.py [--force] [NET ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent
SRC_DIR = ROOT / ".cache" / "models" / "onnx" / "light"
OUT_DIR = ROOT / ".cache" / "models" / "light"
IMAGE = ROOT / ".cache" / "models" / "images" / "astronaut.png"
NETS = ("resnet50", "inception_v1", "inception_v2", "vgg19", "squeezenet", "densenet121",
        "shufflenet", "bvlc_alexnet", "zfnet512")
SEED_BASE = 20261122

# Ops that pass the second moment through unchanged (a deliberate approximation for
# pooling and LRN: max pooling raises it somewhat, LRN lowers it somewhat).
PASS_THROUGH = {"MaxPool", "AveragePool", "GlobalAveragePool", "LRN", "Dropout",
                "Flatten", "Transpose", "Identity", "Squeeze"}


class LightModelError(Exception):
    pass


def model_seed(net: str) -> int:
    return SEED_BASE ^ zlib.crc32(net.encode())


class WeightMaker:
    """Draws every weight of one model from one seeded generator, in graph order."""

    def __init__(self, net: str):
        self.rng = np.random.default_rng(model_seed(net))

    def normal(self, shape, std: float) -> np.ndarray:
        return (self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std))

    def uniform(self, shape, lo: float, hi: float) -> np.ndarray:
        u = self.rng.random(shape, dtype=np.float32)
        return (u * np.float32(hi - lo) + np.float32(lo)).astype(np.float32)


def weight_shapes(graph) -> dict[str, list[int]]:
    """Name -> shape of every float weight to regenerate."""
    inits = {i.name: i for i in graph.initializer}
    shapes = {}
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in inits:
            shapes[node.output[0]] = [int(d) for d in numpy_helper.to_array(inits[node.input[0]])]
    for init in graph.initializer:
        if init.data_type == TensorProto.FLOAT and init.name not in shapes:
            shapes[init.name] = list(init.dims)
    return shapes


def consumers(graph) -> dict[str, list[tuple]]:
    uses: dict[str, list[tuple]] = {}
    for node in graph.node:
        for k, name in enumerate(node.input):
            uses.setdefault(name, []).append((node, k))
    return uses


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


class Builder:
    """Walks the graph in order, generating weights and propagating second moments."""

    def __init__(self, net: str, graph):
        self.graph = graph
        self.shapes = weight_shapes(graph)
        self.uses = consumers(graph)
        self.maker = WeightMaker(net)
        self.weights: dict[str, np.ndarray] = {}
        self.moment: dict[str, float] = {}
        # A weight that reaches its consumer through Unsqueeze or Reshape:
        # tensor name -> (weight name, shape of that tensor).
        self.alias: dict[str, tuple[str, list[int]]] = {}
        self.int_consts = {i.name: numpy_helper.to_array(i) for i in graph.initializer
                           if i.data_type == TensorProto.INT64}

    def weight_value(self, name: str) -> str | None:
        """The generated weight behind a tensor name, if the tensor is a weight."""
        if name in self.alias:
            return self.alias[name][0]
        return name if name in self.shapes else None

    def shape_of(self, name: str) -> list[int]:
        """Shape of a weight tensor as its consumer sees it (after Reshape/Unsqueeze)."""
        return self.alias[name][1] if name in self.alias else self.shapes[name]

    def need(self, name: str) -> np.ndarray:
        if name not in self.weights:
            raise LightModelError(f"weight {name} used before it was generated")
        return self.weights[name]

    def put(self, name: str, value: np.ndarray) -> None:
        if name in self.weights:
            return
        if list(value.shape) != self.shapes[name]:
            raise LightModelError(f"{name}: generated {value.shape}, expected {self.shapes[name]}")
        self.weights[name] = value.astype(np.float32)

    def m(self, name: str) -> float:
        if name not in self.moment:
            raise LightModelError(f"no activation statistics for tensor {name}")
        return self.moment[name]

    def conv_like(self, node, w_name, b_name, fan_in: int) -> None:
        weight = self.weight_value(w_name)
        self.put(weight, self.maker.normal(self.shapes[weight], (2.0 / fan_in) ** 0.5))
        bias_m = 0.0
        if b_name:
            bias = self.weight_value(b_name)
            self.put(bias, self.maker.normal(self.shapes[bias], 0.02))
            bias_m = 0.02 ** 2
        self.moment[node.output[0]] = 2.0 * self.m(node.input[0]) + bias_m

    def conv(self, node) -> None:
        shape = self.shape_of(node.input[1])
        fan_in = int(np.prod(shape[1:]))
        bias = node.input[2] if len(node.input) > 2 else None
        self.conv_like(node, node.input[1], bias, fan_in)

    def gemm(self, node) -> None:
        shape = self.shape_of(node.input[1])
        fan_in = shape[1] if attr(node, "transB", 0) else shape[0]
        bias = node.input[2] if len(node.input) > 2 else None
        self.conv_like(node, node.input[1], bias, fan_in)

    def batch_norm(self, node) -> None:
        x, scale, bias, mean, var = node.input[:5]
        m_in = self.m(x)
        channels = self.shapes[scale]
        self.put(scale, self.maker.uniform(channels, 0.8, 1.2))
        self.put(bias, self.maker.normal(channels, 0.1))
        self.put(mean, self.maker.normal(channels, 0.1 * m_in ** 0.5))
        self.put(var, self.maker.uniform(channels, 0.8, 1.25) * np.float32(m_in))
        self.moment[node.output[0]] = 1.0 + 0.01

    def unsqueeze(self, node) -> None:
        src = node.input[0]
        weight = self.weight_value(src)
        if weight is None:
            self.moment[node.output[0]] = self.m(src)
            return
        shape = list(self.shape_of(src))
        for axis in sorted(attr(node, "axes", [])):
            shape.insert(axis if axis >= 0 else len(shape) + axis + 1, 1)
        self.alias[node.output[0]] = (weight, shape)

    def reshape(self, node) -> None:
        src, shape_name = node.input[:2]
        weight = self.weight_value(src)
        if weight is None:
            self.moment[node.output[0]] = self.m(src)
            return
        old = self.shape_of(src)
        new = [old[i] if d == 0 else int(d) for i, d in enumerate(self.int_consts[shape_name])]
        if -1 in new:
            known = int(np.prod([d for d in new if d != -1]))
            new[new.index(-1)] = int(np.prod(old)) // known
        self.alias[node.output[0]] = (weight, new)

    def binary(self, node) -> None:
        """Mul/Add with a per-channel weight (Caffe Scale layers) or of two activations."""
        a, b = node.input[:2]
        w = self.weight_value(b) or self.weight_value(a)
        x = a if w == self.weight_value(b) else b
        if w is None:
            ma, mb = self.m(a), self.m(b)
            self.moment[node.output[0]] = ma * mb if node.op_type == "Mul" else ma + mb
            return
        if node.op_type == "Mul":
            self.put(w, self.maker.uniform(self.shapes[w], 0.8, 1.2))
            self.moment[node.output[0]] = self.m(x) * 1.0
        else:
            self.put(w, self.maker.normal(self.shapes[w], 0.1))
            self.moment[node.output[0]] = self.m(x) + 0.01

    def visit(self, node) -> None:
        op = node.op_type
        if op == "ConstantOfShape":
            return
        if op == "Conv":
            self.conv(node)
        elif op == "Gemm":
            self.gemm(node)
        elif op == "BatchNormalization":
            self.batch_norm(node)
        elif op == "Unsqueeze":
            self.unsqueeze(node)
        elif op == "Reshape":
            self.reshape(node)
        elif op in ("Mul", "Add"):
            self.binary(node)
        elif op == "Relu":
            self.moment[node.output[0]] = self.m(node.input[0]) / 2.0
        elif op == "Sum":
            self.moment[node.output[0]] = sum(self.m(x) for x in node.input)
        elif op == "Concat":
            self.moment[node.output[0]] = sum(self.m(x) for x in node.input) / len(node.input)
        elif op == "Softmax":
            self.moment[node.output[0]] = 1.0
        elif op in PASS_THROUGH:
            self.moment[node.output[0]] = self.m(node.input[0])
        else:
            raise LightModelError(f"node {node.name or node.output[0]}: no weight rule for {op}")
        for name in node.input:
            weight = self.weight_value(name)
            if weight and weight not in self.weights and node.output[0] not in self.alias:
                raise LightModelError(f"node {node.output[0]} ({op}): no rule for weight {name}")

    def run(self, data_inputs: list[str]) -> None:
        for name in data_inputs:
            self.moment[name] = 1.0
        for node in self.graph.node:
            self.visit(node)
        missing = sorted(set(self.shapes) - set(self.weights))
        used = {n for node in self.graph.node for n in node.input}
        missing = [n for n in missing if n in used]
        if missing:
            raise LightModelError(f"weights never generated: {missing[:5]}")


def convert(net: str) -> onnx.ModelProto:
    src = SRC_DIR / f"light_{net}.onnx"
    if not src.is_file():
        raise LightModelError(f"{src} missing: run scripts/fetch_models.py first")
    model = onnx.load(src)
    graph = model.graph
    init_names = {i.name for i in graph.initializer}
    data_inputs = [i.name for i in graph.input if i.name not in init_names]
    builder = Builder(net, graph)
    builder.run(data_inputs)
    # Edit the graph in place: copying a model with 500 MB of weights is slow.
    nodes = [n for n in graph.node if n.op_type != "ConstantOfShape"]
    used = {name for n in nodes for name in n.input}
    kept = [i for i in graph.initializer if i.data_type != TensorProto.FLOAT and i.name in used]
    inputs = [i for i in graph.input if i.name in data_inputs]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    for name in sorted(builder.weights):
        if name in used:
            value = builder.weights.pop(name)
            tensor = graph.initializer.add()
            tensor.name = name
            tensor.data_type = TensorProto.FLOAT
            tensor.dims.extend(value.shape)
            tensor.raw_data = value.tobytes()
    graph.initializer.extend(kept)
    del graph.input[:]
    graph.input.extend(inputs)
    del graph.value_info[:]
    out = model
    out.ir_version = 4
    out.producer_name = "nnac scripts/make_light_models.py"
    out.producer_version = "1"
    out.doc_string = (f"ONNX light_{net} topology (onnx 1.23.2 test data) with seeded "
                      f"random weights, seed {model_seed(net)}; not a trained network.")
    onnx.checker.check_model(out)
    return out


def image_input(shape: list[int]) -> np.ndarray:
    import cv2
    img = cv2.imread(str(IMAGE), cv2.IMREAD_COLOR)
    if img is None:
        raise LightModelError(f"cannot read {IMAGE}: run scripts/fetch_models.py first")
    h, w = shape[2], shape[3]
    img = cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA)[:, :, ::-1]
    x = (img.astype(np.float32) / 255.0 - 0.45) / 0.25
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


def run_once(model: onnx.ModelProto) -> dict:
    """Runs the model with ONNX Runtime on a real image, with every tensor as an output."""
    import onnxruntime as ort
    graph_outputs = model.graph.output
    names = [o.name for o in graph_outputs]
    n_declared = len(graph_outputs)
    for node in model.graph.node:
        for out in node.output:
            if out not in names:
                graph_outputs.append(helper.make_empty_tensor_value_info(out))
    probe = model.SerializeToString()
    del graph_outputs[n_declared:]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    sess = ort.InferenceSession(probe, opts,
                                providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    results = sess.run(None, {inp.name: image_input(inp.shape)})
    final = {o.name: r for o, r in zip(sess.get_outputs(), results) if o.name in names}
    if not all(np.isfinite(r).all() for r in results):
        raise LightModelError("non-finite activations under ONNX Runtime")
    max_abs = max(float(np.abs(r).max()) for r in results if r.dtype == np.float32)
    return {
        "input": {"name": inp.name, "shape": list(inp.shape)},
        "outputs": [{"name": n, "shape": list(r.shape), "min": float(r.min()),
                     "max": float(r.max())} for n, r in final.items()],
        "max_abs_activation": max_abs,
    }


def stamp_text(nets) -> str:
    parts = [hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
             onnx.__version__, np.__version__]
    for net in nets:
        src = SRC_DIR / f"light_{net}.onnx"
        parts.append(hashlib.sha256(src.read_bytes()).hexdigest() if src.is_file() else "-")
    return "\n".join(parts) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("nets", nargs="*", metavar="NET", help=f"any of {', '.join(NETS)}")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    unknown = [n for n in args.nets if n not in NETS]
    if unknown:
        parser.error(f"unknown net {unknown[0]}; expected one of {', '.join(NETS)}")
    nets = args.nets or list(NETS)
    stamp_file = OUT_DIR / ".stamp"
    stamp = stamp_text(NETS)
    if not args.force and not args.nets and stamp_file.is_file() \
            and stamp_file.read_text() == stamp \
            and all((OUT_DIR / f"{n}.onnx").is_file() for n in NETS):
        print(f"make_light_models: up to date, {len(NETS)} models in {OUT_DIR}")
        return 0
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    manifest_file = OUT_DIR / "manifest.json"
    manifest = json.loads(manifest_file.read_text()) if manifest_file.is_file() else {}
    try:
        for net in nets:
            t0 = time.monotonic()
            model = convert(net)
            data = model.SerializeToString()
            path = OUT_DIR / f"{net}.onnx"
            tmp = path.with_suffix(".onnx.tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
            info = run_once(model)
            params = sum(int(np.prod(i.dims)) for i in model.graph.initializer)
            info.update(file=path.name, sha256=hashlib.sha256(data).hexdigest(),
                        parameters=params, seed=model_seed(net))
            manifest[net] = info
            outs = ", ".join(f"{o['name']} {o['shape']}" for o in info["outputs"])
            print(f"make_light_models: {net:<13} {params / 1e6:6.2f} M params -> {outs}; "
                  f"max |activation| {info['max_abs_activation']:.3g} "
                  f"({time.monotonic() - t0:.1f} s)")
    except LightModelError as e:
        print(f"make_light_models: error: {net}: {e}", file=sys.stderr)
        return 1
    manifest_file.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    if not args.nets:
        stamp_file.write_text(stamp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
