"""get_slice's keys converted to what the native core reads: one int, slice
or list of ints per leading dimension, `...` expanded. Lists, tuples inside
a tuple key and 1-D numpy arrays or torch tensors become lists of ints;
boolean ones (masks) the positions of their True elements, as numpy reads
them. The core checks the values (ranges, steps, one list at most)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from . import SafetensorError


def _array_values(value: Any) -> Optional[list]:
    """The elements of a 1-D numpy array or torch tensor (None for anything
    else); a 0-d one is an int index, left as it is."""
    ndim = getattr(value, "ndim", None)
    if ndim is None or not hasattr(value, "tolist"):
        return None
    if ndim == 0:
        return None
    if ndim != 1:
        raise SafetensorError(f"indexing with a {ndim}-dimensional array is not supported")
    return value.tolist()


def _as_picks(values: list, size: Optional[int]) -> List[Any]:
    if values and all(isinstance(v, bool) for v in values):
        if size is not None and len(values) != size:
            raise SafetensorError(
                f"boolean index did not match the dimension: the dimension is {size} but the "
                f"boolean index has {len(values)} elements"
            )
        return [i for i, keep in enumerate(values) if keep]
    if any(isinstance(v, (list, tuple)) for v in values):
        raise SafetensorError(
            "indexing with a nested list (a 2-dimensional index) is not supported")
    return list(values)


def _part(value: Any, size: Optional[int], nested: bool) -> Any:
    if isinstance(value, list) or (nested and isinstance(value, tuple)):
        return _as_picks(list(value), size)
    values = _array_values(value)
    if values is not None:
        return _as_picks(values, size)
    return value


def _indices(key: Any, shape: Sequence[int]) -> List[Any]:
    """One index per leading dimension of a tensor of `shape`."""
    rank = len(shape)
    parts = key if isinstance(key, tuple) else (key,)
    nested = isinstance(key, tuple)
    if any(p is None for p in parts):
        raise SafetensorError("indexing with None (numpy.newaxis) is not supported")
    ellipses = sum(1 for p in parts if p is Ellipsis)
    if ellipses > 1:
        raise SafetensorError("an index can only have a single ellipsis ('...')")
    if ellipses == 1:
        i = next(i for i, p in enumerate(parts) if p is Ellipsis)
        fill = max(rank - (len(parts) - 1), 0)
        parts = parts[:i] + (slice(None),) * fill + parts[i + 1 :]
    return [_part(p, shape[d] if d < rank else None, nested) for d, p in enumerate(parts)]
