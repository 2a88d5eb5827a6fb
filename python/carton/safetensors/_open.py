"""safe_open: a safetensors file opened lazily (mapped, or read with pread),
its tensors handed out as numpy arrays or torch tensors."""

from __future__ import annotations

import ctypes
import os
from typing import Any, Dict, Iterator, List, Optional, Union

from .. import _carton
from . import SafetensorError
from ._index import _indices

_FRAMEWORKS = {"np": "np", "numpy": "np", "pt": "pt", "torch": "pt", "pytorch": "pt"}
# The reference's name of each framework, for its messages.
_FRAMEWORK_NAMES = {"np": "numpy", "pt": "pytorch"}
# Devices the reference names, alone ("cuda" is "cuda:0") or with ":N".
_DEVICE_KINDS = ("cuda", "musa", "npu", "xpu", "xla", "mlu", "hpu")

# numpy's type for each header dtype numpy has.
_NUMPY_TYPES = {
    "BOOL": "|b1",
    "U8": "|u1",
    "I8": "|i1",
    "I16": "<i2",
    "U16": "<u2",
    "F16": "<f2",
    "I32": "<i4",
    "U32": "<u4",
    "F32": "<f4",
    "C64": "<c8",
    "F64": "<f8",
    "I64": "<i8",
    "U64": "<u8",
}


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


def _unsupported(message: str) -> SafetensorError:
    err = SafetensorError(message)
    err.code = "unsupported"
    return err


def _parse_device(device: Any) -> Union[str, int]:
    """The reference's devices: "cpu", "mps", "cuda" ("cuda:0"), "cuda:N"
    (and musa, npu, xpu, xla, mlu, hpu), an int (torch picks the
    accelerator); torch.device objects too. Returns what torch takes."""
    if isinstance(device, int) and not isinstance(device, bool):
        if device < 0:
            raise SafetensorError(f"device {device} is invalid")
        return device
    if type(device).__name__ == "device" and type(device).__module__ == "torch":
        device = str(device)
    if not isinstance(device, str):
        raise SafetensorError(f"device {device!r} is invalid")
    if device in ("cpu", "mps"):
        return device
    if device in _DEVICE_KINDS:
        return f"{device}:0"
    kind, sep, index = device.partition(":")
    if sep and (kind in _DEVICE_KINDS or kind == "mps") and index.isdigit():
        if kind == "mps":
            if int(index) != 0:
                raise SafetensorError(f"device {device} is invalid: only mps or mps:0 is supported")
            return "mps"
        return f"{kind}:{int(index)}"
    raise SafetensorError(f"device {device} is invalid")


def _writable_bytes(tensor: Any) -> Any:
    """The bytes of a new contiguous CPU torch tensor as a writable buffer
    (valid while the tensor lives)."""
    n = tensor.numel() * tensor.element_size()
    if n == 0:
        return bytearray()
    return (ctypes.c_uint8 * n).from_address(tensor.data_ptr())


def _torch_dtype(name: str, dtype: str) -> Any:
    tdtype = _torch_dtypes().get(dtype)
    if tdtype is None:
        raise _unsupported(
            f'tensor "{name}": dtype {dtype} has no equivalent in torch {_torch().__version__}'
        )
    return tdtype


def _numpy_dtype(name: str, dtype: str) -> str:
    np_type = _NUMPY_TYPES.get(dtype)
    if np_type is None:
        raise _unsupported(
            f'tensor "{name}": dtype {dtype} has no numpy equivalent (use framework="pt")'
        )
    return np_type


def _loadable(indices: List[Any]) -> bool:
    """Whether carton's loader reads this selection: no list, no negative
    step (it reads runs of the file forward)."""
    for index in indices:
        if isinstance(index, list):
            return False
        if isinstance(index, slice) and index.step is not None and index.step < 0:
            return False
    return True


def _torch_tensors(file: "_carton.SafetensorsFile", loaded: Any) -> Dict[str, Any]:
    """The torch tensors of a LoadedFile, in its order, each sharing the
    load's allocation through DLPack."""
    torch = _torch()
    out = {}
    for name in loaded.names():
        capsule, as_bytes = loaded.dlpack(name)
        t = torch.utils.dlpack.from_dlpack(capsule)
        if as_bytes:  # bool and FP8 travel as uint8 (older DLPack readers)
            t = t.view(_torch_dtype(name, file.info(name)[0]))
        out[name] = t
    return out


class PySafeSlice:
    """A tensor of an open file, to be sliced numpy-style without reading the
    rest: ``f.get_slice("w")[1:3, ::2, ..., 0]`` (ints, slices with steps,
    ``...``, fewer indices than dimensions) and one list or 1-D integer (or
    boolean) array picking elements of its dimension, ``[[3, 0, 3], :8]``.
    The result is a new array or tensor holding only the selected elements;
    torch slices of a pread file, or for a CUDA device, without a list or a
    negative step are loaded by carton's loader, reading only their bytes."""

    def __init__(
        self,
        file: "_carton.SafetensorsFile",
        name: str,
        framework: str,
        device: Any,
        cuda: Optional[int] = None,
    ):
        self._file = file
        self._name = name
        self._framework = framework
        self._device = device
        self._cuda = cuda
        self._dtype, self._shape, _ = file.info(name)

    def get_shape(self) -> List[int]:
        """The shape of the whole tensor."""
        return list(self._shape)

    def get_dtype(self) -> str:
        """The dtype of the tensor as the header spells it ("F32", "BF16")."""
        return self._dtype

    def __getitem__(self, key: Any) -> Any:
        indices = _indices(key, self._shape)
        if self._framework == "np":
            import numpy as np

            np_type = _numpy_dtype(self._name, self._dtype)

            def allocate(shape):
                out = np.empty(shape, dtype=np_type)
                return out, out

            return self._file.read_slice(self._name, indices, allocate)
        torch = _torch()
        tdtype = _torch_dtype(self._name, self._dtype)
        if (self._cuda is not None or not self._file.mapped) and _loadable(indices):
            try:
                loaded = self._file.load_slice(self._name, indices, self._cuda)
                return _torch_tensors(self._file, loaded)[self._name]
            except SafetensorError as e:
                if e.code != "unsupported":  # a slice the loader cannot read is read below
                    raise

        def allocate(shape):
            out = torch.empty(shape, dtype=tdtype)
            return out, _writable_bytes(out)

        t = self._file.read_slice(self._name, indices, allocate)
        return t if self._device == "cpu" else t.to(self._device)


class safe_open:  # noqa: N801 - the reference's name
    """Opens a safetensors file and validates its header (the tensors' bytes
    are read only when used).

    Args:
        filename: the file.
        framework: "np"/"numpy" (numpy arrays) or "pt"/"torch"/"pytorch"
            (torch tensors), each an array of its own, writable, as the
            reference gives them.
        device: "cpu"; torch also takes its devices ("cuda", "cuda:0", an
            int, "mps", ...). On a CUDA device (with a CUDA build of torch),
            get_tensor, get_tensors and forward slices are loaded onto it by
            carton's loader (safetensors::Load: pread into pinned staging
            buffers, copies on several streams). Other devices, or a torch
            without CUDA: tensors are read on the host and moved with
            .to(), which raises torch's own error for a device it lacks.
        backend: "mmap" (the default: the file is mapped) or "pread" (the
            file is never mapped; each tensor is read with pread(2)).
        zero_copy: (carton's, not the reference's; backend "mmap" only)
            numpy arrays are read-only views of the file's mapping instead,
            kept alive by the arrays: no copy, and no memory of their own.

    Use it as a context manager; arrays taken from it stay valid after it is
    closed.
    """

    def __init__(
        self,
        filename: Union[str, "os.PathLike[str]"],
        framework: str,
        device: Union[str, int] = "cpu",
        *,
        backend: str = "mmap",
        zero_copy: bool = False,
    ) -> None:
        self._file: Optional[_carton.SafetensorsFile] = None
        fw = _FRAMEWORKS.get(framework) if isinstance(framework, str) else None
        if fw is None:
            raise SafetensorError(f"framework {framework} is invalid")
        if not isinstance(backend, str):
            raise TypeError(f"argument 'backend': '{type(backend).__name__}' object is not a str")
        device = _parse_device(device)
        if fw == "np" and device != "cpu":
            raise SafetensorError(f"Device {device} is not supported for framework numpy")
        if zero_copy and backend == "pread":
            raise SafetensorError('zero_copy needs backend="mmap": a pread file is not mapped')
        if fw == "pt":
            _torch()  # ImportError now rather than at the first tensor
        self._framework = fw
        self._device = device
        self._backend = backend
        self._zero_copy = zero_copy
        self._file = _carton.SafetensorsFile.open(os.fspath(filename), backend)

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
        (its base is the mapped file, kept alive by the array). On a CUDA
        device (torch with CUDA), it is loaded there by carton's loader."""
        f = self._open()
        if self._framework == "np":
            if self._zero_copy:
                return f.get_numpy(name)
            return f.get_numpy(name).copy() if f.mapped else f.read_numpy(name)
        dtype, shape, _ = f.info(name)
        tdtype = _torch_dtype(name, dtype)
        cuda = self._cuda_index()
        if cuda is not None:
            return self._load([name], cuda)[name]
        t = _torch().empty(shape, dtype=tdtype)
        if t.numel() > 0:
            f.read_into(name, _writable_bytes(t))
        return t if self._device == "cpu" else t.to(self._device)

    def get_tensors(self) -> Dict[str, Any]:
        """Every tensor, {name: tensor} in the order of their data in the
        file. torch tensors on the host or a CUDA device are loaded in one
        pass by carton's loader (reader threads with pread, one allocation
        that the tensors share and free together; pinned staging buffers and
        several copy streams for a GPU); numpy arrays and other devices are
        get_tensor of each name."""
        f = self._open()
        names = f.offset_keys()
        if self._framework == "pt":
            for name in names:
                _torch_dtype(name, f.info(name)[0])  # dtypes torch lacks: SafetensorError
            cuda = self._cuda_index()
            if cuda is not None or self._device == "cpu":
                return self._load(names, cuda)
        return {name: self.get_tensor(name) for name in names}

    def _cuda_index(self) -> Optional[int]:
        """The CUDA device torch tensors go to through carton's loader, or
        None: the host, another device, or a torch without CUDA (whose own
        error .to() then raises)."""
        if self._framework != "pt" or self._device == "cpu":
            return None
        device = self._device
        if isinstance(device, str):
            kind, _, index = device.partition(":")
            if kind != "cuda":
                return None
            device = int(index)
        torch = _torch()
        if not torch.cuda.is_available() or device >= torch.cuda.device_count():
            return None
        return device

    def _load(self, names: List[str], cuda: Optional[int]) -> Dict[str, Any]:
        """torch tensors `names`, in that order, from one load onto the host
        or CUDA device `cuda`."""
        f = self._open()
        return _torch_tensors(f, f.load(names, cuda))

    def get_slice(self, name: str) -> PySafeSlice:
        """A slicing handle for tensor `name` (see PySafeSlice)."""
        return PySafeSlice(self._open(), name, self._framework, self._device, self._cuda_index())

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._open())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in set(self.keys())


class _safe_open_handle(safe_open):  # noqa: N801 - the reference's name
    """safe_open for an open file object (one with ``fileno()`` and a
    ``name``, e.g. from ``open(path, "rb")``): the file named ``f.name`` is
    opened, as the reference does."""

    def __init__(
        self, f: Any, framework: str, device: Union[str, int] = "cpu", *, backend: str = "mmap"
    ) -> None:
        getattr(f, "fileno")  # AttributeError for an object that is not a file
        super().__init__(os.fspath(f.name), framework, device, backend=backend)
