"""carton.safetensors.torch as the reference's: every torch 1.13 dtype,
save_model/load_model with shared tensors and their helpers, the errors and
the file layout shared with numpy."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from carton.safetensors import SafetensorError, safe_open  # noqa: E402
from carton.safetensors.numpy import load_file as np_load_file  # noqa: E402
from carton.safetensors.numpy import save_file as np_save_file  # noqa: E402
from carton.safetensors.torch import (  # noqa: E402
    _find_shared_tensors,
    _remove_duplicate_names,
    load,
    load_file,
    load_model,
    save,
    save_file,
    save_model,
    storage_ptr,
    storage_size,
)

EXAMPLE = (
    b'@\x00\x00\x00\x00\x00\x00\x00{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}'
    b"    " + b"\x00" * 16
)

# Every dtype of torch 1.13 that safetensors has, with its header name.
DTYPES = {
    torch.bool: "BOOL",
    torch.uint8: "U8",
    torch.int8: "I8",
    torch.int16: "I16",
    torch.int32: "I32",
    torch.int64: "I64",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.float32: "F32",
    torch.float64: "F64",
    torch.complex64: "C64",
}


def sample(dtype, shape):
    g = torch.Generator().manual_seed(3)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=g, dtype=dtype)


def test_the_reference_worked_example(tmp_path):
    data = torch.zeros((2, 2), dtype=torch.int32)
    assert save({"test": data}) == EXAMPLE
    save_file({"test": data}, tmp_path / "e.safetensors")
    assert (tmp_path / "e.safetensors").read_bytes() == EXAMPLE


@pytest.mark.parametrize("dtype", list(DTYPES), ids=[DTYPES[d] for d in DTYPES])
def test_every_torch_dtype_round_trips(tmp_path, dtype):
    tensors = {"m": sample(dtype, (3, 4)), "s": sample(dtype, ()), "e": sample(dtype, (0, 2))}
    path = tmp_path / "t.safetensors"
    save_file(tensors, path)
    for loaded in (load_file(path), load(path.read_bytes())):
        for k, v in tensors.items():
            assert loaded[k].dtype == dtype and loaded[k].shape == v.shape
            assert torch.equal(loaded[k], v)
    with safe_open(path, framework="pt") as f:
        assert f.get_slice("m").get_dtype() == DTYPES[dtype]
        t = f.get_tensor("m")
        t += t  # tensors of their own: writable
        # torch has no negative steps: [:, ::-2] of 4 columns is columns 3, 1.
        assert torch.equal(f.get_slice("m")[1:, ::-2], tensors["m"][1:].flip(1)[:, ::2])
        assert torch.equal(f.get_slice("m")[..., 2], tensors["m"][..., 2])
    assert save(tensors) == path.read_bytes()


def test_bfloat16_slices_match_torch_indexing(tmp_path):
    a = sample(torch.bfloat16, (5, 6, 7))
    path = tmp_path / "b.safetensors"
    save_file({"a": a}, path)
    rng = np.random.default_rng(5)
    with safe_open(path, framework="pt") as f:
        s = f.get_slice("a")
        for _ in range(200):
            key = tuple(
                slice(int(rng.integers(0, d)), int(rng.integers(0, d + 2)), int(rng.integers(1, 3)))
                if rng.random() < 0.7
                else int(rng.integers(-d, d))
                for d in a.shape[: int(rng.integers(0, 4))]
            )
            assert torch.equal(s[key], a[key]), key
    with safe_open(path, framework="np") as f:
        with pytest.raises(SafetensorError) as e:
            f.get_tensor("a")
        assert "BF16" in str(e.value)


@pytest.mark.filterwarnings("ignore:ComplexHalf")
@pytest.mark.parametrize("dtype", [torch.complex128, torch.complex32, torch.quint8])
def test_dtypes_safetensors_lacks_are_refused(dtype):
    if dtype == torch.quint8:
        t = torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.quint8)
    else:
        t = torch.zeros(2, dtype=dtype)
    with pytest.raises((SafetensorError, ValueError)) as e:
        save({"x": t})
    assert str(dtype).split(".")[-1] in str(e.value) or "sparse" in str(e.value)


def test_shared_non_contiguous_and_sparse_tensors_are_refused():
    a = torch.zeros(4)
    with pytest.raises(RuntimeError) as e:
        save({"a": a, "b": a})
    assert "share memory" in str(e.value) and "save_model" in str(e.value)
    with pytest.raises(ValueError) as e:
        save({"t": torch.zeros(3, 4).t()})
    assert "non contiguous" in str(e.value)
    with pytest.raises(ValueError) as e:
        save({"s": torch.zeros(3, 3).to_sparse()})
    assert "sparse" in str(e.value)
    with pytest.raises(ValueError):
        save({"n": np.zeros(2)})
    # Two views of one storage that do not overlap are not shared.
    base = torch.arange(8.0)
    assert sorted(map(sorted, _find_shared_tensors({"lo": base[:4], "hi": base[4:]}))) == [
        ["hi"],
        ["lo"],
    ]


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = self.a  # the same parameters under two names


class Copied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 4)


def test_save_model_and_load_model_handle_shared_tensors(tmp_path):
    model = Tied()
    path = tmp_path / "m.safetensors"
    save_model(model, path)
    with safe_open(path, framework="pt") as f:
        assert f.keys() == ["a.bias", "a.weight"]
        assert f.metadata() == {"b.bias": "a.bias", "b.weight": "a.weight"}
    fresh = Tied()
    missing, unexpected = load_model(fresh, path)
    assert (list(missing), list(unexpected)) == ([], [])
    assert torch.equal(fresh.b.weight, model.a.weight)
    assert fresh.a.weight.data_ptr() == fresh.b.weight.data_ptr()


def test_load_model_reports_missing_and_unexpected_keys(tmp_path):
    path = tmp_path / "c.safetensors"
    save_file({"a.weight": torch.zeros(4, 4), "extra": torch.zeros(1)}, path)
    with pytest.raises(RuntimeError) as e:
        load_model(Copied(), path)
    message = str(e.value)
    assert "Missing key(s)" in message and '"a.bias"' in message and '"b.weight"' in message
    assert "Unexpected key(s)" in message and '"extra"' in message
    missing, unexpected = load_model(Copied(), path, strict=False)
    assert sorted(missing) == ["a.bias", "b.bias", "b.weight"]
    assert list(unexpected) == ["extra"]


def test_save_model_force_contiguous(tmp_path):
    class T(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("t", torch.zeros(3, 4).t())

    with pytest.raises(ValueError) as e:
        save_model(T(), tmp_path / "t.safetensors", force_contiguous=False)
    assert "force_contiguous=True" in str(e.value)
    save_model(T(), tmp_path / "t.safetensors")  # contiguous by default
    assert load_file(tmp_path / "t.safetensors")["t"].shape == (4, 3)


def test_storage_helpers():
    a = torch.zeros(10)
    assert storage_ptr(a[2:]) == storage_ptr(a) == a.data_ptr()
    assert storage_size(a[2:]) == 40
    shared = _find_shared_tensors({"a": a, "b": a[2:], "c": torch.ones(2)})
    assert sorted(map(sorted, shared)) == [["a", "b"], ["c"]]
    assert _remove_duplicate_names({"a": a, "b": a}) == {"a": ["b"]}
    assert _remove_duplicate_names({"a": a, "b": a}, preferred_names=["b"]) == {"b": ["a"]}
    assert _remove_duplicate_names({"a": a, "b": a}, discard_names=["a"]) == {"b": ["a"]}
    with pytest.raises(RuntimeError):
        _remove_duplicate_names({"x": a[:5], "y": a[3:]})  # neither covers the storage


def test_numpy_and_torch_read_each_others_files(tmp_path):
    np_save_file({"x": np.arange(6, dtype=np.float32).reshape(2, 3)}, tmp_path / "n.safetensors")
    assert torch.equal(load_file(tmp_path / "n.safetensors")["x"], torch.arange(6.0).reshape(2, 3))
    save_file({"y": torch.arange(4, dtype=torch.int16)}, tmp_path / "t.safetensors")
    np.testing.assert_array_equal(np_load_file(tmp_path / "t.safetensors")["y"], np.arange(4))
