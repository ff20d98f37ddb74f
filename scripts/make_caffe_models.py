#!/usr/bin/env python3
"""Writes seeded random-weight .caffemodel files for the BVLC deploy prototxts.

The brocolli-caffe package ships the BVLC deploy nets (fetched into
.cache/models/caffe/models/<name>/deploy.prototxt by scripts/fetch_models.py) but no
trained weights. This script gives each parametrised layer blobs of the shape Caffe
expects, drawn from a seeded generator (He-normal weights, small normal biases), and
writes a binary NetParameter to .cache/models/caffe-random/<name>.caffemodel.

The prototxt is parsed with google.protobuf against the committed descriptor set
crates/frontend/src/proto/caffe.fds.bin (the same schema nnac's importer uses). Blob
shapes come from this script's own shape walk over the layers (independent of nnac's
importer, which checks them again on import).

Deterministic: same numpy version + same prototxt => byte-identical files. Files that
already exist are kept unless --force is given. Usage:

    .venv/bin/python scripts/make_caffe_models.py [--force] [--root DIR]
"""

import argparse
import hashlib
import math
import sys
from pathlib import Path

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

# Model name -> seed. The name is the directory under .cache/models/caffe/models/.
MODELS = {
    "bvlc_alexnet": 1001,
    "bvlc_reference_caffenet": 1002,
    "bvlc_googlenet": 1003,
}


def net_parameter_class(root):
    fds = descriptor_pb2.FileDescriptorSet.FromString(
        (root / "crates/frontend/src/proto/caffe.fds.bin").read_bytes()
    )
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("caffe.NetParameter"))


def per_axis(repeated, h, w, has_hw, default):
    """Caffe's kernel/stride/pad: _h/_w pair, one value for both axes, or two values."""
    if has_hw:
        return [h, w]
    if len(repeated) == 0:
        return [default, default]
    if len(repeated) == 1:
        return [repeated[0], repeated[0]]
    return list(repeated)


def conv_geometry(p):
    kernel = per_axis(p.kernel_size, p.kernel_h, p.kernel_w, p.HasField("kernel_h"), None)
    stride = per_axis(p.stride, p.stride_h, p.stride_w, p.HasField("stride_h"), 1)
    pad = per_axis(p.pad, p.pad_h, p.pad_w, p.HasField("pad_h"), 0)
    dil = per_axis(p.dilation, 1, 1, False, 1)
    return kernel, stride, pad, dil


def conv_out(shape, p):
    kernel, stride, pad, dil = conv_geometry(p)
    spatial = [
        (shape[2 + i] + 2 * pad[i] - (dil[i] * (kernel[i] - 1) + 1)) // stride[i] + 1
        for i in range(2)
    ]
    return [shape[0], p.num_output] + spatial, kernel


def pool_out(shape, p):
    """Caffe's pooling_layer.cpp: ceil rounding, last window must start inside H + pad."""
    if p.global_pooling:
        return shape[:2] + [1, 1]
    kernel = [p.kernel_h, p.kernel_w] if p.HasField("kernel_h") else [p.kernel_size] * 2
    stride = [p.stride_h, p.stride_w] if p.HasField("stride_h") else [p.stride] * 2
    pad = [p.pad_h, p.pad_w] if p.HasField("pad_h") else [p.pad] * 2
    out = []
    for i in range(2):
        span = shape[2 + i] + 2 * pad[i] - kernel[i]
        n = (math.ceil(span / stride[i]) if p.ceil_mode else span // stride[i]) + 1
        if pad[i] and (n - 1) * stride[i] >= shape[2 + i] + pad[i]:
            n -= 1
        out.append(n)
    return shape[:2] + out


def normal(rng, shape, std):
    return (rng.standard_normal(size=shape, dtype=np.float32) * np.float32(std)).astype(np.float32)


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


# BlobProto field 5 (`repeated float data [packed = true]`), wire type 2.
BLOB_DATA_KEY = bytes([5 << 3 | 2])


def set_blob(blob, array):
    """Shape through the message API; data merged as one packed field (fast for the
    tens of millions of floats of AlexNet's fc6)."""
    blob.shape.dim.extend(array.shape)
    raw = array.astype("<f4").tobytes()
    blob.MergeFromString(BLOB_DATA_KEY + varint(len(raw)) + raw)


def layer_shapes_and_blobs(layer, shapes, rng):
    """Top shapes of one layer and the random blobs it needs (None for weight-free)."""
    t = layer.type
    bottoms = [shapes[b] for b in layer.bottom]
    if t == "Input":
        dims = [list(s.dim) for s in layer.input_param.shape]
        return [[1] + d[1:] for d in (dims if len(dims) > 1 else dims * len(layer.top))], []
    x = bottoms[0]
    if t == "Convolution":
        p = layer.convolution_param
        out, kernel = conv_out(x, p)
        fan_in = x[1] // p.group * kernel[0] * kernel[1]
        blobs = [normal(rng, [p.num_output, x[1] // p.group] + kernel, math.sqrt(2.0 / fan_in))]
        if p.bias_term:
            blobs.append(normal(rng, [p.num_output], 0.05))
        return [out], blobs
    if t == "InnerProduct":
        p = layer.inner_product_param
        k = int(np.prod(x[1:]))
        blobs = [normal(rng, [p.num_output, k], math.sqrt(2.0 / k))]
        if p.bias_term:
            blobs.append(normal(rng, [p.num_output], 0.05))
        return [[x[0], p.num_output]], blobs
    if t == "Pooling":
        return [pool_out(x, layer.pooling_param)], []
    if t == "Concat":
        axis = layer.concat_param.axis
        out = list(x)
        out[axis] = sum(b[axis] for b in bottoms)
        return [out], []
    if t in ("ReLU", "LRN", "Dropout", "Softmax"):
        return [x], []
    raise SystemExit(f"make_caffe_models: layer '{layer.name}': type {t} not handled")


def make_model(net_class, prototxt, seed):
    net = net_class()
    text_format.Parse(prototxt.read_text(), net)
    if len(net.layers) or len(net.input):
        raise SystemExit(f"make_caffe_models: {prototxt}: only `layer` + Input nets are handled")
    rng = np.random.default_rng(seed)
    shapes = {}
    out = net_class()
    out.name = net.name
    for layer in net.layer:
        tops, blobs = layer_shapes_and_blobs(layer, shapes, rng)
        for name, shape in zip(layer.top, tops):
            shapes[name] = shape
        if blobs:
            dst = out.layer.add()
            dst.name = layer.name
            dst.type = layer.type
            for b in blobs:
                set_blob(dst.blobs.add(), b)
    return out.SerializeToString(deterministic=True)


def main():
    here = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=here, help="repository root")
    ap.add_argument("--force", action="store_true", help="rewrite existing files")
    args = ap.parse_args()
    root = args.root
    net_class = net_parameter_class(root)
    src_dir = root / ".cache/models/caffe/models"
    dst_dir = root / ".cache/models/caffe-random"
    dst_dir.mkdir(parents=True, exist_ok=True)
    for name, seed in MODELS.items():
        prototxt = src_dir / name / "deploy.prototxt"
        dst = dst_dir / f"{name}.caffemodel"
        if not prototxt.is_file():
            print(f"make_caffe_models: {prototxt} is missing (run scripts/fetch_models.py)", file=sys.stderr)
            return 1
        if dst.is_file() and not args.force:
            continue
        data = make_model(net_class, prototxt, seed)
        tmp = dst.with_suffix(".caffemodel.tmp")
        tmp.write_bytes(data)
        tmp.replace(dst)
        digest = hashlib.sha256(data).hexdigest()[:16]
        print(f"make_caffe_models: wrote {dst} ({len(data) / 1e6:.1f} MB, sha256 {digest}...)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
