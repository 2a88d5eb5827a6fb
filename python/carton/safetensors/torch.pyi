"""Type hints for carton.safetensors.torch."""

import os
from typing import Dict, List, Optional, Set, Tuple, Union

import torch

PathLike = Union[str, os.PathLike[str]]

def storage_ptr(tensor: torch.Tensor) -> int:
    """The address of the tensor's storage (0 for meta tensors)."""

def storage_size(tensor: torch.Tensor) -> int:
    """The size in bytes of the tensor's storage."""

def _find_shared_tensors(state_dict: Dict[str, torch.Tensor]) -> List[Set[str]]:
    """Groups of names whose tensors share memory."""

def _remove_duplicate_names(
    state_dict: Dict[str, torch.Tensor],
    *,
    preferred_names: Optional[List[str]] = ...,
    discard_names: Optional[List[str]] = ...,
) -> Dict[str, List[str]]:
    """For each group of shared tensors, the kept name mapped to the dropped ones."""

def save(tensors: Dict[str, torch.Tensor], metadata: Optional[Dict[str, str]] = ...) -> bytes:
    """The bytes of a safetensors file holding the tensors."""

def save_file(
    tensors: Dict[str, torch.Tensor], filename: PathLike, metadata: Optional[Dict[str, str]] = ...
) -> None:
    """Writes the tensors to a safetensors file, atomically."""

def load(data: bytes) -> Dict[str, torch.Tensor]:
    """The tensors of the bytes of a safetensors file."""

def load_file(
    filename: PathLike, device: Union[str, int] = ..., *, backend: str = ...
) -> Dict[str, torch.Tensor]:
    """The tensors of a safetensors file, on `device`, in data order."""

def save_model(
    model: torch.nn.Module,
    filename: PathLike,
    metadata: Optional[Dict[str, str]] = ...,
    force_contiguous: bool = ...,
) -> None:
    """Saves a state_dict, one name per group of shared tensors."""

def load_model(
    model: torch.nn.Module,
    filename: PathLike,
    strict: bool = ...,
    device: Union[str, int] = ...,
    *,
    backend: str = ...,
) -> Tuple[List[str], List[str]]:
    """Loads a file saved by save_model into the model: (missing, unexpected)."""
