"""Type hints for carton.safetensors, the reference's Python API (0.7)."""

import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

PathLike = Union[str, os.PathLike[str]]

__version__: str

class SafetensorError(Exception):
    """Any failure of the safetensors layer."""

    code: str
    kind: Optional[str]

class PySafeSlice:
    """A tensor of an open file, sliced numpy-style: f.get_slice("w")[1:3, ::2, ..., 0]."""

    def get_shape(self) -> List[int]:
        """The shape of the whole tensor."""
    def get_dtype(self) -> str:
        """The dtype as the header spells it ("F32")."""
    def __getitem__(self, key: Any) -> Any:
        """The selected elements as a new numpy array or torch tensor."""

class safe_open:
    """A safetensors file opened lazily; tensors are arrays of their own, or with
    zero_copy read-only numpy views of the mapping."""

    def __init__(
        self,
        filename: PathLike,
        framework: str,
        device: Union[str, int] = ...,
        *,
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
    def get_slice(self, name: str) -> PySafeSlice:
        """A slicing handle for the tensor."""
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def __contains__(self, name: object) -> bool: ...

def serialize(
    tensor_dict: Mapping[str, Mapping[str, Any]], metadata: Optional[Mapping[str, str]] = ...
) -> bytes:
    """The bytes of a safetensors file: {name: {"dtype", "shape", "data"}}."""

def serialize_file(
    tensor_dict: Mapping[str, Mapping[str, Any]],
    filename: PathLike,
    metadata: Optional[Mapping[str, str]] = ...,
) -> None:
    """As serialize, into a file written atomically."""

def deserialize(bytes: Union[bytes, bytearray, memoryview]) -> List[Tuple[str, Dict[str, Any]]]:
    """[(name, {"shape", "dtype", "data": bytearray})] in data order."""
