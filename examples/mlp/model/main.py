"""A two-layer MLP in numpy, run by carton's Python runner.

y = layer2(relu(layer1(x))), with the weights read from model.safetensors
beside this file (safetensors is simple enough to read with numpy: an
8-byte little-endian header length, a JSON header, then the tensors).
Each label comes back with the class the MLP picks for its row.
"""
import json
import os
import struct

import numpy as np

_NUMPY_DTYPES = {"F32": "<f4", "F64": "<f8"}


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (header_size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_size])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        start = 8 + header_size + begin
        dtype = _NUMPY_DTYPES[info["dtype"]]
        array = np.frombuffer(data[start : 8 + header_size + end], dtype=dtype)
        tensors[name] = array.reshape(info["shape"])
    return tensors


class Mlp:
    def __init__(self, weights):
        # Computed in float64 and rounded once at the end, so the result
        # does not depend on the order of the sums.
        self.w = {name: w.astype(np.float64) for name, w in weights.items()}

    def infer_with_tensors(self, tensors):
        x = tensors["x"].astype(np.float64)
        hidden = np.maximum(x @ self.w["layer1.weight"].T + self.w["layer1.bias"], 0.0)
        y = hidden @ self.w["layer2.weight"].T + self.w["layer2.bias"]
        classes = y.argmax(axis=1)
        labels = [f"{label}: class {c}" for label, c in zip(tensors["labels"], classes)]
        return {"y": y.astype(np.float32), "labels": np.array(labels, dtype=object)}


def get_model():
    here = os.path.dirname(os.path.abspath(__file__))
    return Mlp(load_safetensors(os.path.join(here, "model.safetensors")))
