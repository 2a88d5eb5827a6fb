"""safe_open: a safetensors file opened lazily, its tensors handed out as numpy
arrays (zero-copy, read-only views of the mapping) or torch tensors."""

from __future__ import annotations

import ctypes
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from .. import _carton
from . import SafetensorError

_FRAMEWORKS = {"np": "np", "numpy": "np", "pt": "pt", "torch": "pt", "pytorch": "pt"}


def _torch():
    import torch

    return torch


def _torch_dtypes() -> Dict[str, Any]:
    torch = _torch()
    names = {
        "BOOL": "bool",
        "U8": "uint8",
        "I8": "int8",
        "I16": "int16",
        "U16": "uint16",
        "F16": "float16",
        "BF16": "bfloat16",
        "I32": "int32",
        "U32": "uint32",
        "F32": "float32",
        "C64": "complex64",
        "F64": "float64",
        "I64": "int64",
        "U64": "uint64",
        "F8_E4M3": "float8_e4m3fn",
        "F8_E5M2": "float8_e5m2",
        "F8_E4M3FNUZ": "float8_e4m3fnuz",
        "F8_E5M2FNUZ": "float8_e5m2fnuz",
        "F8_E8M0": "float8_e8m0fnu",
    }
    return {k: getattr(torch, v) for k, v in names.items() if hasattr(torch, v)}


def _writable_bytes(tensor: Any) -> Any:
    """The bytes of a new contiguous CPU torch tensor as a writable buffer
    (valid while the tensor lives)."""
    n = tensor.numel() * tensor.element_size()
    return (ctypes.c_uint8 * n).from_address(tensor.data_ptr())


def _new_torch_tensor(name: str, dtype: str, shape: List[int], fill) -> Any:
    torch = _torch()
    tdtype = _torch_dtypes().get(dtype)
    if tdtype is None:
        err = SafetensorError(
            f'tensor "{name}": dtype {dtype} has no equivalent in torch {torch.__version__}'
        )
        err.code = "unsupported"
        raise err
    t = torch.empty(shape, dtype=tdtype)
    if t.numel() > 0:
        fill(_writable_bytes(t))
    return t


def _indices(key: Any, rank: int) -> List[Any]:
    """A numpy-style index as one int or slice per leading dimension (`...`
    expanded)."""
    parts = key if isinstance(key, tuple) else (key,)
    if any(p is None for p in parts):
        raise SafetensorError("indexing with None (numpy.newaxis) is not supported")
    if any(isinstance(p, (list, tuple)) or hasattr(p, "__array__") and not _is_int(p) for p in parts):
        raise SafetensorError("indexing with lists or arrays is not supported")
    ellipses = sum(1 for p in parts if p is Ellipsis)
    if ellipses > 1:
        raise SafetensorError("an index can only have a single ellipsis ('...')")
    if ellipses == 1:
        i = next(i for i, p in enumerate(parts) if p is Ellipsis)
        fill = max(rank - (len(parts) - 1), 0)
        parts = parts[:i] + (slice(None),) * fill + parts[i + 1 :]
    return list(parts)


def _is_int(value: Any) -> bool:
    try:
        value.__index__()
    except (AttributeError, TypeError):
        return False
    return not isinstance(value, bool)


class PySafeSlice:
    """A tensor of an open file, to be sliced numpy-style without reading the
    rest: ``f.get_slice("w")[1:3, ::2, ..., 0]`` (ints, slices with steps,
    ``...``, fewer indices than dimensions). The result is a new array or
    tensor holding only the selected elements."""

    def __init__(self, file: "_carton.SafetensorsFile", name: str, framework: str, device: Any):
        self._file = file
        self._name = name
        self._framework = framework
        self._device = device
        self._dtype, self._shape, _ = file.info(name)

    def get_shape(self) -> List[int]:
        """The shape of the whole tensor."""
        return list(self._shape)

    def get_dtype(self) -> str:
        """The dtype of the tensor as the header spells it ("F32", "BF16")."""
        return self._dtype

    def __getitem__(self, key: Any) -> Any:
        indices = _indices(key, len(self._shape))
        if self._framework == "np":
            return self._file.slice_numpy(self._name, indices)
        shape = self._file.slice_shape(self._name, indices)
        t = _new_torch_tensor(
            self._name,
            self._dtype,
            shape,
            lambda out: self._file.slice_into(self._name, indices, out),
        )
        return t if self._device in ("cpu", None) else t.to(self._device)


class safe_open:  # noqa: N801 - the reference's name
    """Opens a safetensors file: maps it read-only and validates its header (the
    tensors' bytes are read only when used).

    Args:
        filename: the file.
        framework: "np"/"numpy" (numpy arrays) or "pt"/"torch" (torch
            tensors), each read with one copy into an array of its own,
            writable, as the reference gives them.
        device: "cpu"; torch also takes its own devices ("cuda:0", an int),
            the tensors being moved there after they are read.
        zero_copy: (carton's, not the reference's) numpy arrays are
            read-only views of the file's mapping instead, kept alive by the
            arrays: no copy, and no memory of their own.

    Use it as a context manager; arrays taken from it stay valid after it is
    closed.
    """

    def __init__(
        self,
        filename: Union[str, "os.PathLike[str]"],
        framework: str,
        device: Union[str, int] = "cpu",
        *,
        zero_copy: bool = False,
    ) -> None:
        self._file: Optional[_carton.SafetensorsFile] = None
        self._zero_copy = zero_copy
        fw = _FRAMEWORKS.get(framework) if isinstance(framework, str) else None
        if fw is None:
            raise SafetensorError(f"framework {framework} is invalid")
        if fw == "np" and device != "cpu":
            raise SafetensorError(f"device {device} is not supported for framework numpy")
        if fw == "pt":
            _torch()  # ImportError now rather than at the first tensor
        self._framework = fw
        self._device = device
        self._file = _carton.SafetensorsFile.open(os.fspath(filename))

    def _open(self) -> "_carton.SafetensorsFile":
        if self._file is None:
            raise SafetensorError("File is closed")
        return self._file

    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._file = None

    def keys(self) -> List[str]:
        """The tensor names, sorted."""
        return self._open().keys()

    def offset_keys(self) -> List[str]:
        """The tensor names in the order of their data in the file."""
        return self._open().offset_keys()

    def metadata(self) -> Optional[Dict[str, str]]:
        """The __metadata__ map, or None when the file has none."""
        return self._open().metadata()

    def get_tensor(self, name: str) -> Any:
        """The tensor `name`: an array or tensor of its own (writable), or
        with zero_copy a read-only numpy array viewing the file's mapping
        (its base is the mapped file, kept alive by the array)."""
        f = self._open()
        if self._framework == "np":
            view = f.get_numpy(name)
            return view if self._zero_copy else view.copy()
        dtype, shape, _ = f.info(name)
        t = _new_torch_tensor(name, dtype, shape, lambda out: f.read_into(name, out))
        return t if self._device in ("cpu", None) else t.to(self._device)

    def get_slice(self, name: str) -> PySafeSlice:
        """A slicing handle for tensor `name` (see PySafeSlice)."""
        return PySafeSlice(self._open(), name, self._framework, self._device)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._open())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in set(self.keys())
