"""safetensors for numpy: save, save_file, load, load_file, as in the
reference's ``safetensors.numpy``."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Union

import numpy as np

from . import SafetensorError, TensorSpec, deserialize, safe_open, serialize, serialize_file

_TYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "U64": np.uint64,
    "I32": np.int32,
    "U32": np.uint32,
    "I16": np.int16,
    "U16": np.uint16,
    "I8": np.int8,
    "U8": np.uint8,
    "BOOL": bool,
    "C64": np.complex64,
}


def _is_little_endian(tensor: np.ndarray) -> bool:
    order = tensor.dtype.byteorder
    return order in ("<", "|") or (order == "=" and np.little_endian)


def _flatten(tensor_dict: Dict[str, np.ndarray], keep_alive: List[np.ndarray]) -> Dict[str, Any]:
    # Big-endian arrays are byte-swapped and non-contiguous ones made
    # contiguous (C order), as the reference's tobytes() did; others are
    # written from their own memory. `keep_alive` holds every array whose
    # address a TensorSpec carries until the bytes are written.
    if not isinstance(tensor_dict, dict):
        raise ValueError(
            f"Expected a dict of [str, np.ndarray] but received {type(tensor_dict)}"
        )
    flat = {}
    for k, v in tensor_dict.items():
        if isinstance(v, np.generic):
            v = np.asarray(v)  # a numpy scalar: a 0-d array
        if not isinstance(v, np.ndarray):
            raise ValueError(f"Key `{k}` is invalid, expected np.ndarray but received {type(v)}")
        if not _is_little_endian(v):
            v = v.astype(v.dtype.newbyteorder("<"))
        if not v.flags.c_contiguous:
            v = np.ascontiguousarray(v)  # ndim >= 1 here: 0-d arrays are contiguous
        keep_alive.append(v)
        flat[k] = TensorSpec(
            dtype=v.dtype.name, shape=v.shape, data_ptr=v.ctypes.data, data_len=v.nbytes
        )
    return flat


def save(tensor_dict: Dict[str, np.ndarray], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The bytes of a safetensors file holding `tensor_dict`.

    Args:
        tensor_dict: {name: numpy array} of dtypes bool, int8...int64,
            uint8...uint64, float16, float32, float64, complex64.
        metadata: free-form {str: str}, kept in the header as __metadata__.
    """
    keep_alive: List[np.ndarray] = []
    return serialize(_flatten(tensor_dict, keep_alive), metadata=metadata)


def save_file(
    tensor_dict: Dict[str, np.ndarray],
    filename: Union[str, "os.PathLike[str]"],
    metadata: Optional[Dict[str, str]] = None,
) -> None:
    """Writes `tensor_dict` to a safetensors file, atomically."""
    keep_alive: List[np.ndarray] = []
    serialize_file(_flatten(tensor_dict, keep_alive), filename, metadata=metadata)


def _view2np(safeview) -> Dict[str, np.ndarray]:
    result = {}
    for k, v in safeview:
        dtype = _TYPES.get(v["dtype"])
        if dtype is None:
            err = SafetensorError(f'tensor "{k}": dtype {v["dtype"]} has no numpy equivalent')
            err.code = "unsupported"
            raise err
        result[k] = np.frombuffer(v["data"], dtype=dtype).reshape(v["shape"])
    return result


def load(data: bytes) -> Dict[str, np.ndarray]:
    """The tensors of the bytes of a safetensors file, as writable arrays (copies)."""
    return _view2np(deserialize(data))


def load_file(
    filename: Union[str, "os.PathLike[str]"], *, backend: str = "mmap", zero_copy: bool = False
) -> Dict[str, np.ndarray]:
    """The tensors of a safetensors file in data order, as writable arrays of
    their own (as the reference gives them).

    Args:
        backend: "mmap" (the file is mapped) or "pread" (read with pread(2),
            never mapped).
        zero_copy: (carton's; backend "mmap") read-only arrays viewing the
            mapping instead: no copy; the mapping lives as long as any of
            them.
    """
    with safe_open(filename, framework="np", backend=backend, zero_copy=zero_copy) as f:
        return f.get_tensors()
