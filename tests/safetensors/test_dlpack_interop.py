"""DLPack from safetensors::Load, taken by torch and numpy without a copy.

The structs come from a C entry point (dlpack_export.cc) through ctypes, so
this checks the ABI of carton/safetensors/dlpack.h against real consumers:
dtype, shape, data pointer (no copy) and the deleter they call.
"""
import ctypes
import json
import os
import struct

import numpy as np
import pytest

LIB = os.environ["CARTON_DLPACK_EXPORT"]


@pytest.fixture(scope="module")
def lib():
    lib = ctypes.CDLL(LIB)
    lib.carton_test_export.restype = ctypes.c_void_p
    lib.carton_test_export.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                       ctypes.POINTER(ctypes.c_uint64)]
    return lib


TENSORS = {
    "b": ("BF16", [3, 4], np.arange(12, dtype=np.uint16).tobytes()),
    "f": ("F32", [2, 5], np.linspace(-1, 1, 10, dtype=np.float32).tobytes()),
    "u": ("U8", [7], bytes(range(7))),
}


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    header, data = {}, b""
    for name, (dtype, shape, raw) in TENSORS.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    p = tmp_path_factory.mktemp("dlpack") / "t.safetensors"
    p.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return str(p)


def capsule(lib, path, name):
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    address = ctypes.c_uint64()
    pointer = lib.carton_test_export(path.encode(), name.encode(), 0, ctypes.byref(address))
    assert pointer
    return new(pointer, b"dltensor", None), address.value


class Exporter:
    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def test_numpy_takes_host_tensors_without_a_copy(lib, path):
    for name, dtype in (("u", np.uint8), ("f", np.float32)):
        c, address = capsule(lib, path, name)
        a = np.from_dlpack(Exporter(c))
        assert a.dtype == dtype
        assert list(a.shape) == TENSORS[name][1]
        assert a.ctypes.data == address
        assert a.tobytes() == TENSORS[name][2]


def test_torch_takes_bf16_without_a_copy(lib, path):
    torch = pytest.importorskip("torch")
    from torch.utils.dlpack import from_dlpack
    c, address = capsule(lib, path, "b")
    t = from_dlpack(c)
    assert t.dtype == torch.bfloat16
    assert list(t.shape) == [3, 4]
    assert t.data_ptr() == address
    assert t.view(torch.int16).numpy().tobytes() == TENSORS["b"][2]
    del t  # torch calls the deleter
