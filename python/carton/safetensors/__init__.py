"""safetensors, the reference's Python API (release 0.8) on carton's strict
C++ reader and writer.

Code written for the reference runs unchanged with
``import carton.safetensors as safetensors``:

    with safe_open("model.safetensors", framework="pt", device="cuda:0") as f:
        state_dict = f.get_tensors()    # every tensor, in data order

    with safe_open("model.safetensors", framework="np", backend="pread") as f:
        w = f.get_tensor("w")           # read with pread(2); the file is never mapped
        rows = f.get_slice("emb")[[7, 3, 7], :16]

    with safe_open("model.safetensors", framework="np", zero_copy=True) as f:
        w = f.get_tensor("w")           # carton's: a read-only view of the mapping, no copy

Files are validated completely (every rule of safetensors/FORMAT.md) before
any tensor is handed out; every failure raises SafetensorError, whose
message names the tensor and the rule and whose ``kind`` names the rule
("data_gap", "size_mismatch", ...); a missing file raises FileNotFoundError
("No such file or directory: <path>"), as the reference does. Output bytes
equal the reference's.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from .. import _carton


class SafetensorError(Exception):
    """Any failure of the safetensors layer: a file breaking the format, a
    missing tensor, a dtype the framework has no type for, a bad argument.

    Attributes:
        code: the library's status code name ("corrupt", "unsupported",
            "invalid argument", "not found", "io error").
        kind: the rule a malformed file breaks ("data_gap", "size_mismatch",
            "duplicate_key", ...), or None.
    """

    code: str = "internal"
    kind: Optional[str] = None


_carton.set_safetensor_error(SafetensorError)

# One tensor for serialize / serialize_file: TensorSpec(*, dtype, shape,
# data_ptr, data_len), the address and length of its contiguous
# little-endian bytes, which the caller keeps alive during the call. dtype
# as numpy and torch name it ("float32", "bfloat16", "float8_e4m3fn", ...);
# the `dtype` property gives the header's code ("F32"). An unknown dtype
# raises SafetensorError at construction.
TensorSpec = _carton.TensorSpec

from ._open import PySafeSlice, _safe_open_handle, safe_open  # noqa: E402  (needs SafetensorError)

# The reference release whose Python API this package implements.
__version__ = "0.8.0"

__all__ = [
    "PySafeSlice",
    "SafetensorError",
    "TensorSpec",
    "_safe_open_handle",
    "deserialize",
    "safe_open",
    "serialize",
    "serialize_file",
]


def serialize(
    tensor_dict: Mapping[str, "TensorSpec"], metadata: Optional[Mapping[str, str]] = None
) -> bytes:
    """Serializes raw tensors into the bytes of a safetensors file.

    Args:
        tensor_dict: {name: TensorSpec}; a dict of dicts (the form before
            0.8) is a TypeError, as in the reference.
        metadata: free-form {str: str}, written as __metadata__ (an empty
            dict is written as {}, None leaves it out, as the reference does).
    """
    return _carton.serialize(tensor_dict, metadata)


def serialize_file(
    tensor_dict: Mapping[str, "TensorSpec"],
    filename: Union[str, "os.PathLike[str]"],
    metadata: Optional[Mapping[str, str]] = None,
) -> None:
    """As ``serialize``, into a file, written atomically (a temporary file
    beside it, renamed on success: on any error the file is untouched)."""
    _carton.serialize_file(tensor_dict, os.fspath(filename), metadata)


def deserialize(  # noqa: A002
    bytes: Union[bytes, bytearray, memoryview],
) -> List[Tuple[str, Dict[str, Any]]]:
    """Validates the bytes of a safetensors file and returns its tensors in data
    order: [(name, {"shape": [int], "dtype": "F32", "data": bytearray})]; the
    data are copies."""
    return _carton.deserialize(bytes)
