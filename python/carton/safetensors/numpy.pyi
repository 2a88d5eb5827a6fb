"""Type hints for carton.safetensors.numpy."""

import os
from typing import Dict, Optional, Union

import numpy as np

def save(tensor_dict: Dict[str, np.ndarray], metadata: Optional[Dict[str, str]] = ...) -> bytes:
    """The bytes of a safetensors file holding the arrays."""

def save_file(
    tensor_dict: Dict[str, np.ndarray],
    filename: Union[str, os.PathLike[str]],
    metadata: Optional[Dict[str, str]] = ...,
) -> None:
    """Writes the arrays to a safetensors file, atomically."""

def load(data: bytes) -> Dict[str, np.ndarray]:
    """The arrays of the bytes of a safetensors file (writable copies)."""

def load_file(
    filename: Union[str, os.PathLike[str]], *, backend: str = ..., zero_copy: bool = ...
) -> Dict[str, np.ndarray]:
    """The arrays of a safetensors file in data order (writable arrays of their
    own; with zero_copy, read-only views of its mapping)."""
