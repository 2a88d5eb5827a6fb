"""Type hints for carton.safetensors, the reference's Python API (0.8)."""

import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

PathLike = Union[str, os.PathLike[str]]

__version__: str

class SafetensorError(Exception):
    """Any failure of the safetensors layer."""

    code: str
    kind: Optional[str]

class TensorSpec:
    """One tensor for serialize: its dtype, shape and the address and length of
    its contiguous little-endian bytes (kept alive by the caller)."""

    def __init__(self, *, dtype: str, shape: Sequence[int], data_ptr: int, data_len: int) -> None: ...
    @property
    def dtype(self) -> str:
        """The header's dtype code ("F32")."""
    @property
    def shape(self) -> List[int]:
        """The header's shape (a packed float4_e2m1fn_x2 last dimension doubled)."""
    @property
    def data_ptr(self) -> int: ...
    @property
    def data_len(self) -> int: ...

class PySafeSlice:
    """A tensor of an open file, sliced numpy-style: f.get_slice("w")[1:3, ::2, ..., 0],
    with one list or 1-D array index at most: f.get_slice("w")[[3, 0], :8]."""

    def get_shape(self) -> List[int]:
        """The shape of the whole tensor."""
    def get_dtype(self) -> str:
        """The dtype as the header spells it ("F32")."""
    def __getitem__(self, key: Any) -> Any:
        """The selected elements as a new numpy array or torch tensor."""

class safe_open:
    """A safetensors file opened lazily (backend "mmap" or "pread"); tensors are
    arrays of their own, or with zero_copy read-only numpy views of the mapping."""

    def __init__(
        self,
        filename: PathLike,
        framework: str,
        device: Union[str, int] = ...,
        *,
        backend: str = ...,
        zero_copy: bool = ...,
    ) -> None: ...
    def __enter__(self) -> safe_open: ...
    def __exit__(self, *exc: Any) -> None: ...
    def keys(self) -> List[str]:
        """The tensor names, sorted."""
    def offset_keys(self) -> List[str]:
        """The tensor names in data order."""
    def metadata(self) -> Optional[Dict[str, str]]:
        """__metadata__, or None."""
    def get_tensor(self, name: str) -> Any:
        """The tensor: a read-only numpy view, or a torch tensor of its own."""
    def get_tensors(self) -> Dict[str, Any]:
        """Every tensor, by name, in data order."""
    def get_slice(self, name: str) -> PySafeSlice:
        """A slicing handle for the tensor."""
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def __contains__(self, name: object) -> bool: ...

class _safe_open_handle(safe_open):
    """safe_open of a file object's name (it must have fileno())."""

    def __init__(
        self, f: Any, framework: str, device: Union[str, int] = ..., *, backend: str = ...
    ) -> None: ...

def serialize(
    tensor_dict: Mapping[str, TensorSpec], metadata: Optional[Mapping[str, str]] = ...
) -> bytes:
    """The bytes of a safetensors file: {name: TensorSpec}."""

def serialize_file(
    tensor_dict: Mapping[str, TensorSpec],
    filename: PathLike,
    metadata: Optional[Mapping[str, str]] = ...,
) -> None:
    """As serialize, into a file written atomically."""

def deserialize(bytes: Union[bytes, bytearray, memoryview]) -> List[Tuple[str, Dict[str, Any]]]:
    """[(name, {"shape", "dtype", "data": bytearray})] in data order."""
