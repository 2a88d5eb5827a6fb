"""safetensors, the reference's Python API (release 0.7) on carton's strict,
zero-copy C++ reader and writer.

Code written for the reference runs unchanged with
``import carton.safetensors as safetensors``:

    with safe_open("model.safetensors", framework="np") as f:
        for name in f.keys():
            w = f.get_tensor(name)      # an array of its own, writable, as the reference's

    with safe_open("model.safetensors", framework="np", zero_copy=True) as f:
        w = f.get_tensor("w")           # carton's: a read-only view of the mapping, no copy

Files are validated completely (every rule of safetensors/FORMAT.md) before
any tensor is handed out; every failure raises SafetensorError, whose
message names the tensor and the rule and whose ``kind`` names the rule
("data_gap", "size_mismatch", ...). Output bytes equal the reference's.
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

from ._open import safe_open  # noqa: E402  (needs SafetensorError)

# The reference release whose Python API this package implements.
__version__ = "0.7.0"

__all__ = ["SafetensorError", "deserialize", "safe_open", "serialize", "serialize_file"]


def serialize(
    tensor_dict: Mapping[str, Mapping[str, Any]], metadata: Optional[Mapping[str, str]] = None
) -> bytes:
    """Serializes raw tensors into the bytes of a safetensors file.

    Args:
        tensor_dict: {name: {"dtype": "float32", "shape": [2, 3], "data":
            buffer}}; dtype as numpy and torch name their dtypes ("bool",
            "int8" ... "uint64", "float16", "bfloat16", "float32", "float64",
            "complex64", "float8_e4m3fn", "float8_e5m2", ...), data any
            C-contiguous buffer (bytes, bytearray, a numpy array) of the
            tensor's little-endian bytes.
        metadata: free-form {str: str}, written as __metadata__ (an empty
            dict is written as {}, None leaves it out, as the reference does).
    """
    return _carton.serialize(dict(tensor_dict), None if metadata is None else dict(metadata))


def serialize_file(
    tensor_dict: Mapping[str, Mapping[str, Any]],
    filename: Union[str, "os.PathLike[str]"],
    metadata: Optional[Mapping[str, str]] = None,
) -> None:
    """As ``serialize``, into a file, written atomically (a temporary file
    beside it, renamed on success: on any error the file is untouched)."""
    _carton.serialize_file(
        dict(tensor_dict), os.fspath(filename), None if metadata is None else dict(metadata)
    )


def deserialize(bytes: Union[bytes, bytearray, memoryview]) -> List[Tuple[str, Dict[str, Any]]]:  # noqa: A002
    """Validates the bytes of a safetensors file and returns its tensors in data
    order: [(name, {"shape": [int], "dtype": "F32", "data": bytearray})]; the
    data are copies."""
    return _carton.deserialize(bytes)
