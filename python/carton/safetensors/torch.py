"""safetensors for torch: save, save_file, load, load_file, save_model and
load_model, with the reference's handling of shared tensors and its helpers
(storage_ptr, storage_size, _find_shared_tensors, _remove_duplicate_names),
as in the reference's ``safetensors.torch``.

Every dtype of torch that safetensors has is covered: bool, uint8, int8,
int16, int32, int64, float16, bfloat16, float32, float64, complex64 (and the
unsigned and float8 types of newer torch releases). complex32, complex128
and the quantized types have no safetensors dtype and raise SafetensorError.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from typing import Any, Dict, List, Optional, Set, Tuple, Union

import torch

from . import SafetensorError, TensorSpec, deserialize, safe_open, serialize, serialize_file
from ._open import _torch_dtypes

_TYPES = _torch_dtypes()


def storage_ptr(tensor: torch.Tensor) -> int:
    """The address of the storage the tensor views (0 for meta tensors)."""
    try:
        return tensor.untyped_storage().data_ptr()
    except Exception:
        try:
            return tensor.storage().data_ptr()
        except NotImplementedError:
            return 0


def _end_ptr(tensor: torch.Tensor) -> int:
    if tensor.nelement():
        return tensor.view(-1)[-1].data_ptr() + tensor.element_size()
    return tensor.data_ptr()


def storage_size(tensor: torch.Tensor) -> int:
    """The size in bytes of the storage the tensor views."""
    try:
        return tensor.untyped_storage().nbytes()
    except AttributeError:
        try:
            return tensor.storage().size() * tensor.element_size()
        except NotImplementedError:
            return tensor.nelement() * tensor.element_size()


def _filter_shared_not_shared(
    tensors: List[Set[str]], state_dict: Dict[str, torch.Tensor]
) -> List[Set[str]]:
    # Tensors of one storage that do not overlap are not shared.
    filtered = []
    for shared in tensors:
        if len(shared) < 2:
            filtered.append(shared)
            continue
        areas = sorted(
            (state_dict[name].data_ptr(), _end_ptr(state_dict[name]), name) for name in shared
        )
        _, last_stop, last_name = areas[0]
        filtered.append({last_name})
        for start, stop, name in areas[1:]:
            if start >= last_stop:
                filtered.append({name})
            else:
                filtered[-1].add(name)
            last_stop = stop
    return filtered


def _find_shared_tensors(state_dict: Dict[str, torch.Tensor]) -> List[Set[str]]:
    """Groups of names whose tensors share memory (one group per overlapping
    area of a storage; a tensor alone is a group of one)."""
    tensors = defaultdict(set)
    for k, v in state_dict.items():
        if v.device != torch.device("meta") and storage_ptr(v) != 0 and storage_size(v) != 0:
            tensors[(v.device, storage_ptr(v), storage_size(v))].add(k)
    return _filter_shared_not_shared(list(sorted(tensors.values())), state_dict)


def _is_complete(tensor: torch.Tensor) -> bool:
    return (
        tensor.data_ptr() == storage_ptr(tensor)
        and tensor.nelement() * tensor.element_size() == storage_size(tensor)
    )


def _remove_duplicate_names(
    state_dict: Dict[str, torch.Tensor],
    *,
    preferred_names: Optional[List[str]] = None,
    discard_names: Optional[List[str]] = None,
) -> Dict[str, List[str]]:
    """For each group of shared tensors, the name to keep (one covering the
    whole storage: a preferred name, else one not to discard, else the
    first in order) mapped to the names to drop."""
    preferred = set(preferred_names or [])
    discard = set(discard_names or [])
    to_remove = defaultdict(list)
    for shared in _find_shared_tensors(state_dict):
        complete = {name for name in shared if _is_complete(state_dict[name])}
        if not complete:
            raise RuntimeError(
                "Error while trying to find names to remove to save state dict, but found no "
                f"suitable name to keep for saving amongst: {shared}. None is covering the entire "
                "storage. Refusing to save/load the model since you could be storing much more "
                "memory than needed. Please refer to "
                "https://huggingface.co/docs/safetensors/torch_shared_tensors for more "
                "information. Or open an issue."
            )
        keep = sorted(complete)[0]
        kept = complete.difference(discard)
        if kept:
            keep = sorted(kept)[0]
        if preferred:
            chosen = preferred.intersection(complete)
            if chosen:
                keep = sorted(chosen)[0]
        for name in sorted(shared):
            if name != keep:
                to_remove[keep].append(name)
    return to_remove


def _flatten(tensors: Dict[str, torch.Tensor], keep_alive: List[torch.Tensor]) -> Dict[str, Any]:
    # `keep_alive` holds every tensor (or its CPU copy) whose address a
    # TensorSpec carries until the bytes are written.
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    invalid = []
    for k, v in tensors.items():
        if not isinstance(v, torch.Tensor):
            raise ValueError(f"Key `{k}` is invalid, expected torch.Tensor but received {type(v)}")
        if v.layout != torch.strided:
            invalid.append(k)
    if invalid:
        raise ValueError(
            f"You are trying to save a sparse tensors: `{invalid}` which this library does not "
            "support. You can make it a dense tensor before saving with `.to_dense()` but be "
            "aware this might make a much larger file than needed."
        )
    failing = [names for names in _find_shared_tensors(tensors) if len(names) > 1]
    if failing:
        raise RuntimeError(
            f"Some tensors share memory, this will lead to duplicate memory on disk and "
            f"potential differences when loading them again: {failing}.\n"
            "A potential way to correctly save your model is to use `save_model`.\n"
            "More information at https://huggingface.co/docs/safetensors/torch_shared_tensors"
        )
    if sys.byteorder == "big":
        raise SafetensorError("big-endian hosts are not supported")
    flat = {}
    for k, v in tensors.items():
        if v.is_conj() or v.is_neg():
            v = v.resolve_conj().resolve_neg()
        if not v.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{k}` which is not allowed. It "
                "either means you are trying to save tensors which are reference of each other "
                "in which case it's recommended to save only the full tensors, and reslice at "
                "load time, or simply call `.contiguous()` on your tensor to pack it before "
                "saving."
            )
        if v.device.type != "cpu":
            v = v.to("cpu")
        keep_alive.append(v)
        flat[k] = TensorSpec(
            dtype=str(v.dtype).split(".")[-1],
            shape=list(v.shape),
            data_ptr=v.data_ptr(),
            data_len=v.numel() * v.element_size(),
        )
    return flat


def save(tensors: Dict[str, torch.Tensor], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The bytes of a safetensors file holding `tensors` (contiguous, not
    sharing memory: see save_model)."""
    keep_alive: List[torch.Tensor] = []
    return serialize(_flatten(tensors, keep_alive), metadata=metadata)


def save_file(
    tensors: Dict[str, torch.Tensor],
    filename: Union[str, "os.PathLike[str]"],
    metadata: Optional[Dict[str, str]] = None,
) -> None:
    """Writes `tensors` to a safetensors file, atomically."""
    keep_alive: List[torch.Tensor] = []
    serialize_file(_flatten(tensors, keep_alive), filename, metadata=metadata)


def load_file(
    filename: Union[str, "os.PathLike[str]"],
    device: Union[str, int] = "cpu",
    *,
    backend: str = "mmap",
) -> Dict[str, torch.Tensor]:
    """The tensors of a safetensors file on `device`, in data order
    (safe_open(...).get_tensors()).

    Args:
        backend: "mmap" (the file is mapped) or "pread" (read with pread(2),
            never mapped).
    """
    with safe_open(filename, framework="pt", device=device, backend=backend) as f:
        return f.get_tensors()


def _getdtype(dtype_str: str) -> torch.dtype:
    if dtype_str not in _TYPES:
        err = SafetensorError(f"dtype {dtype_str} has no equivalent in torch {torch.__version__}")
        err.code = "unsupported"
        raise err
    return _TYPES[dtype_str]


def _view2torch(safeview) -> Dict[str, torch.Tensor]:
    result = {}
    for k, v in safeview:
        dtype = _getdtype(v["dtype"])
        if len(v["data"]) == 0:
            arr = torch.empty(v["shape"], dtype=dtype)
        else:
            arr = torch.frombuffer(v["data"], dtype=dtype).reshape(v["shape"])
        result[k] = arr
    return result


def load(data: bytes) -> Dict[str, torch.Tensor]:
    """The tensors of the bytes of a safetensors file."""
    return _view2torch(deserialize(data))


def save_model(
    model: torch.nn.Module,
    filename: Union[str, "os.PathLike[str]"],
    metadata: Optional[Dict[str, str]] = None,
    force_contiguous: bool = True,
) -> None:
    """Saves a model's state_dict, keeping one name per group of shared tensors
    (the others are recorded in the metadata as {dropped: kept}), as the
    reference does.

    Args:
        force_contiguous: make every tensor contiguous first (the default,
            as in the reference's current source; False: a non-contiguous
            one raises ValueError).
    """
    state_dict = model.state_dict()
    for kept, removed in _remove_duplicate_names(state_dict).items():
        for name in removed:
            if metadata is None:
                metadata = {}
            if name not in metadata:
                metadata[name] = kept
            del state_dict[name]
    if force_contiguous:
        state_dict = {k: v.contiguous() for k, v in state_dict.items()}
    try:
        save_file(state_dict, filename, metadata=metadata)
    except ValueError as e:
        raise ValueError(
            str(e) + " Or use save_model(..., force_contiguous=True), read the docs for "
            "potential caveats."
        ) from e


def load_model(
    model: torch.nn.Module,
    filename: Union[str, "os.PathLike[str]"],
    strict: bool = True,
    device: Union[str, int] = "cpu",
    *,
    backend: str = "mmap",
) -> Tuple[List[str], List[str]]:
    """Loads a file saved by save_model into `model`, restoring shared tensors.

    Returns:
        (missing, unexpected): the model's keys the file lacks and the file's
        keys the model lacks. backend: as for load_file. With strict (the
        default), any of them raises RuntimeError listing them.
    """
    state_dict = load_file(filename, device=device, backend=backend)
    model_state_dict = model.state_dict()
    to_removes = _remove_duplicate_names(model_state_dict, preferred_names=list(state_dict.keys()))
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = set(missing)
    for group in to_removes.values():
        for name in group:
            if name not in missing:
                unexpected.append(name)
            else:
                missing.remove(name)
    if strict and (missing or unexpected):
        missing_keys = ", ".join([f'"{k}"' for k in sorted(missing)])
        unexpected_keys = ", ".join([f'"{k}"' for k in sorted(unexpected)])
        error = f"Error(s) in loading state_dict for {model.__class__.__name__}:"
        if missing:
            error += f"\n    Missing key(s) in state_dict: {missing_keys}"
        if unexpected:
            error += f"\n    Unexpected key(s) in state_dict: {unexpected_keys}"
        raise RuntimeError(error)
    return list(missing), unexpected
