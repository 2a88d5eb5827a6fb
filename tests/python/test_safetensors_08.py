"""carton.safetensors against the reference's 0.8 API: backend="mmap"|"pread"
on safe_open and the load_files (pread never maps the file), get_tensors(),
TensorSpec and the serialize/serialize_file that take it, _safe_open_handle,
get_slice with list and array indices, and the reference's errors (types and
words)."""

import importlib
import os
import struct

import numpy as np
import pytest

import carton.safetensors as safetensors
from carton.safetensors import (
    SafetensorError,
    TensorSpec,
    _safe_open_handle,
    safe_open,
    serialize,
    serialize_file,
)
from carton.safetensors.numpy import load_file, save, save_file

torch = pytest.importorskip("torch")
from carton.safetensors.torch import load_file as pt_load_file  # noqa: E402
from carton.safetensors.torch import load_model, save_model  # noqa: E402
from carton.safetensors.torch import save_file as pt_save_file  # noqa: E402

BACKENDS = ["mmap", "pread"]

ARRAYS = {
    "f32": np.arange(12, dtype=np.float32).reshape(3, 4),
    "f16": np.arange(24, dtype=np.float16).reshape(2, 3, 4),
    "i64": np.arange(5, dtype=np.int64),
    "u8": np.arange(7, dtype=np.uint8),
    "b": np.array([True, False, True]),
    "scalar": np.array(7.5, dtype=np.float64),
    "empty": np.zeros((0, 5), np.float32),
    "c64": np.array([1 + 2j, 3 - 4j], np.complex64),
}


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "t.safetensors"
    save_file(ARRAYS, p, metadata={"foo": "bar"})
    return p


def mapped(path) -> bool:
    """Whether this process maps `path` now."""
    with open("/proc/self/maps") as maps:
        return any(line.rstrip("\n").endswith(str(path)) for line in maps)


# -- backend -----------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_both_backends_read_every_tensor_with_numpy(path, backend):
    with safe_open(path, framework="np", backend=backend) as f:
        assert f.metadata() == {"foo": "bar"}
        for name, want in ARRAYS.items():
            got = f.get_tensor(name)
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_array_equal(got, want)
            assert got.flags.writeable and got.flags.owndata, name
    d = load_file(path, backend=backend)
    assert list(d) == list(safe_open(path, framework="np").offset_keys())


@pytest.mark.parametrize("backend", BACKENDS)
def test_both_backends_read_every_tensor_with_torch(tmp_path, backend):
    tensors = {
        "fp32_2d": torch.arange(12, dtype=torch.float32).reshape(3, 4),
        "bf16_2d": torch.arange(8, dtype=torch.bfloat16).reshape(2, 4),
        "scalar": torch.tensor(7.5),
        "empty": torch.empty((0, 5), dtype=torch.float16),
        "i64": torch.arange(5),
    }
    p = tmp_path / "pt.safetensors"
    pt_save_file(tensors, p)
    with safe_open(p, framework="pt", device="cpu", backend=backend) as f:
        one_by_one = {k: f.get_tensor(k) for k in f.keys()}
        at_once = f.get_tensors()
    loaded = pt_load_file(p, backend=backend)
    for got in (one_by_one, at_once, loaded):
        assert set(got) == set(tensors)
        for k, want in tensors.items():
            assert got[k].dtype == want.dtype and got[k].shape == want.shape, k
            assert torch.equal(got[k], want), k


def test_pread_never_maps_the_file_and_mmap_does(path):
    with safe_open(path, framework="np", backend="pread") as f:
        f.get_tensors()
        f.get_slice("f32")[1:, [0, 2]]
        assert not mapped(path)
    with safe_open(path, framework="pt", backend="pread") as f:
        f.get_tensors()
        assert not mapped(path)
    with safe_open(path, framework="np", backend="mmap") as f:
        assert mapped(path)


def test_pread_reads_a_file_truncated_after_opening_as_an_error(tmp_path):
    p = tmp_path / "shrinks.safetensors"
    save_file({"a": np.zeros(1024, np.float32)}, p)
    with safe_open(p, framework="np", backend="pread") as f:
        os.truncate(p, os.path.getsize(p) - 100)
        with pytest.raises(SafetensorError) as e:
            f.get_tensor("a")
        assert e.value.code == "io error" and "shrank" in str(e.value)


def test_invalid_backends_are_refused_with_the_reference_s_words(path):
    with pytest.raises(SafetensorError) as e:
        safe_open(path, framework="pt", backend="not_a_backend")
    assert str(e.value) == 'backend "not_a_backend" is invalid (expected one of: "mmap", "pread")'
    with pytest.raises(TypeError):
        safe_open(path, framework="np", backend=1)
    with pytest.raises(SafetensorError):
        load_file(path, backend="read_file")
    with pytest.raises(SafetensorError) as e:
        safe_open(path, framework="np", backend="pread", zero_copy=True)
    assert "mmap" in str(e.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hostile_files_are_refused_by_both_backends(tmp_path, backend):
    header = b'{"liar":{"dtype":"F32","shape":[1024,1024],"data_offsets":[0,4194304]}}'
    p = tmp_path / "lying.safetensors"
    p.write_bytes(struct.pack("<Q", len(header)) + header + b"\x00")
    with pytest.raises(SafetensorError) as e:
        safe_open(p, framework="pt", backend=backend)
    assert e.value.kind == "data_end_mismatch"
    assert str(e.value).startswith("Error while deserializing header: ")
    good = tmp_path / "good.safetensors"
    save_file({"a": np.zeros(4, np.float32)}, good)
    data = good.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    p.write_bytes(data[: 8 + n // 2])
    with pytest.raises(SafetensorError) as e:
        safe_open(p, framework="np", backend=backend)
    assert e.value.kind == "header_past_end"


def test_load_model_takes_a_backend(tmp_path):
    src, dst = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3)
    p = tmp_path / "m.safetensors"
    save_model(src, p)
    load_model(dst, p, backend="pread")
    assert torch.equal(src.weight, dst.weight) and torch.equal(src.bias, dst.bias)


# -- get_tensors -------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_get_tensors_gives_every_tensor_in_data_order(path, backend):
    with safe_open(path, framework="np", backend=backend) as f:
        tensors = f.get_tensors()
        assert list(tensors) == f.offset_keys()
        for name, want in ARRAYS.items():
            np.testing.assert_array_equal(tensors[name], want)
    with pytest.raises(SafetensorError) as e:
        f.get_tensors()
    assert str(e.value) == "File is closed"


# -- errors ------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_missing_file_is_the_reference_s_file_not_found_error(tmp_path, backend):
    os.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as e:
        with safe_open("notafile", framework="pt", backend=backend):
            pass
    assert str(e.value) == "No such file or directory: notafile"
    with pytest.raises(FileNotFoundError):
        load_file(tmp_path / "nothing.safetensors", backend=backend)
    with pytest.raises(FileNotFoundError):
        pt_load_file(tmp_path / "nothing.safetensors", backend=backend)


def test_safetensor_error_s_module_is_importable():
    importlib.import_module(SafetensorError.__module__)
    assert issubclass(SafetensorError, Exception)


def test_devices_are_parsed_as_the_reference_parses_them(path):
    for bad in ("gpu", "cuda:x", "mps:1", -1, 1.5):
        with pytest.raises(SafetensorError) as e:
            safe_open(path, framework="pt", device=bad)
        assert "is invalid" in str(e.value)
    with pytest.raises(SafetensorError) as e:
        safe_open(path, framework="np", device="cuda")
    assert str(e.value) == "Device cuda:0 is not supported for framework numpy"
    with safe_open(path, framework="pt", device=torch.device("cpu")) as f:
        assert f.get_tensor("i64").device.type == "cpu"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this torch has CUDA")
@pytest.mark.parametrize("backend", BACKENDS)
def test_cuda_without_cuda_raises_torch_s_own_error(path, backend):
    with safe_open(path, framework="pt", device="cuda:0", backend=backend) as f:
        with pytest.raises((AssertionError, RuntimeError)) as e:
            f.get_tensor("f32")
        assert "CUDA" in str(e.value)
        with pytest.raises((AssertionError, RuntimeError)):
            f.get_tensors()
    with pytest.raises((AssertionError, RuntimeError)):
        pt_load_file(path, device="cuda:0")


# -- TensorSpec and serialize --------------------------------------------------


def test_tensor_spec_is_the_reference_s():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    spec = TensorSpec(dtype="float32", shape=a.shape, data_ptr=a.ctypes.data, data_len=a.nbytes)
    assert spec.dtype == "F32" and spec.shape == [2, 3]
    assert spec.data_ptr == a.ctypes.data and spec.data_len == 24
    assert repr(spec) == f"TensorSpec(dtype='F32', shape=[2, 3], data_ptr={a.ctypes.data}, data_len=24)"
    with pytest.raises(AttributeError):
        spec.dtype = "int8"
    with pytest.raises(TypeError):
        TensorSpec("float32", [2, 3], a.ctypes.data, a.nbytes)  # keyword-only
    with pytest.raises(SafetensorError) as e:
        TensorSpec(dtype="nonsense", shape=[1], data_ptr=0, data_len=0)
    assert str(e.value).startswith('Unknown dtype "nonsense". Supported dtypes: bool, int8,')
    with pytest.raises(OverflowError):
        TensorSpec(dtype="int8", shape=[-1], data_ptr=0, data_len=0)
    packed = TensorSpec(dtype="float4_e2m1fn_x2", shape=torch.Size([2, 3]), data_ptr=0, data_len=0)
    assert packed.dtype == "F4" and packed.shape == [2, 6]  # two values per stored byte
    assert TensorSpec(dtype="bfloat16", shape=(), data_ptr=0, data_len=0).dtype == "BF16"


def test_serialize_takes_tensor_specs_and_refuses_dicts(tmp_path):
    a = np.zeros((2, 2), np.int32)
    specs = {"test": TensorSpec(dtype="int32", shape=[2, 2], data_ptr=a.ctypes.data, data_len=16)}
    assert serialize(specs) == save({"test": a})
    serialize_file(specs, tmp_path / "s.safetensors", metadata={"k": "v"})
    assert load_file(tmp_path / "s.safetensors")["test"].shape == (2, 2)
    with pytest.raises(TypeError):
        serialize({"test": {"dtype": "float32", "shape": [1], "data_ptr": 0, "data_len": 0}})
    with pytest.raises(TypeError):
        serialize_file({"test": {"dtype": "int8", "shape": [1], "data": b"\0"}}, tmp_path / "x")
    assert not (tmp_path / "x").exists()


# -- _safe_open_handle ---------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_safe_open_handle_opens_a_file_object(path, backend):
    with open(path, "rb") as fh:
        with _safe_open_handle(fh, framework="np", device="cpu", backend=backend) as g:
            assert g.keys() == sorted(ARRAYS)
            np.testing.assert_array_equal(g.get_tensor("f32"), ARRAYS["f32"])
            assert list(g.get_tensors()) == g.offset_keys()

    class NoFileno:
        name = str(path)

    with pytest.raises(AttributeError):
        _safe_open_handle(NoFileno(), framework="np")
    assert "_safe_open_handle" in dir(safetensors)


# -- get_slice with lists and arrays ---------------------------------------------


def random_key(rng, shape):
    """A numpy index for `shape` with one list (or array) of ints, negative
    and repeated ones too, among ints and slices."""
    parts = []
    for d in shape:
        kind = rng.integers(0, 3)
        if kind == 0 and d > 0:
            parts.append(int(rng.integers(-d, d)))
        elif kind == 1:
            parts.append(slice(None, None, int(rng.choice([1, 2, -1]))))
        else:
            parts.append(slice(int(rng.integers(0, d + 1)), None))
    at = int(rng.integers(0, len(shape)))
    n = int(rng.integers(0, 5))
    picks = [int(x) for x in rng.integers(-shape[at], shape[at], n)] if shape[at] else []
    parts[at] = picks if rng.random() < 0.5 else np.array(picks, dtype=np.int64)
    return tuple(parts[: max(at + 1, int(rng.integers(0, len(parts) + 1)))])


@pytest.mark.parametrize("backend", BACKENDS)
def test_list_indices_match_numpy(tmp_path, backend):
    rng = np.random.default_rng(8)
    arrays = {
        "a2": rng.integers(-100, 100, (6, 7), dtype=np.int16),
        "a3": rng.standard_normal((4, 5, 6)),
        "a4": rng.integers(0, 255, (3, 4, 2, 5), dtype=np.uint8),
    }
    p = tmp_path / "l.safetensors"
    save_file(arrays, p)
    with safe_open(p, framework="np", backend=backend) as f, safe_open(
        p, framework="pt", backend=backend
    ) as g:
        for _ in range(300):
            name = list(arrays)[int(rng.integers(0, len(arrays)))]
            key = random_key(rng, arrays[name].shape)
            want = arrays[name][key]
            got = f.get_slice(name)[key]
            assert got.shape == want.shape, (name, key)
            np.testing.assert_array_equal(got, want, err_msg=f"{name}[{key}]")
            np.testing.assert_array_equal(g.get_slice(name)[key].numpy(), want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_list_indices_of_every_form(path, backend):
    a = ARRAYS["f32"]
    with safe_open(path, framework="np", backend=backend) as f:
        s = f.get_slice("f32")
        np.testing.assert_array_equal(s[[2, 0, 2]], a[[2, 0, 2]])
        np.testing.assert_array_equal(s[[]], a[[]])  # shape (0, 4), as the reference's
        assert s[[]].shape == (0, 4)
        np.testing.assert_array_equal(s[:, [True, False, False, True]], a[:, [True, False, False, True]])
        np.testing.assert_array_equal(s[np.array([-1, 0])], a[np.array([-1, 0])])
        np.testing.assert_array_equal(s[..., (3, 1)], a[..., [3, 1]])
        np.testing.assert_array_equal(s[1, [3, 1]], a[1, [3, 1]])
        np.testing.assert_array_equal(s[np.int64(1), np.array(2)], a[1, 2])
    with safe_open(path, framework="pt", backend=backend) as g:
        t = g.get_slice("f32")[torch.tensor([2, 0]), 1:]
        assert torch.equal(t, torch.from_numpy(a)[[2, 0], 1:])
        m = g.get_slice("f32")[torch.tensor([True, False, True])]
        assert torch.equal(m, torch.from_numpy(a)[[0, 2]])


def test_list_indices_out_of_reach_raise_safetensor_error(path):
    with safe_open(path, framework="np", backend="pread") as f:
        s = f.get_slice("f32")
        with pytest.raises(SafetensorError) as e:
            s[[0, 3]]
        assert "dimension 0 of size 3: index 3 is out of range" in str(e.value)
        with pytest.raises(SafetensorError) as e:
            s[[0], [1]]
        assert "more than one list" in str(e.value)
        with pytest.raises(SafetensorError) as e:
            s[np.zeros((2, 2), np.int64)]
        assert "2-dimensional" in str(e.value)
        with pytest.raises(SafetensorError) as e:
            s[[True, False]]
        assert "boolean index" in str(e.value)
        with pytest.raises(TypeError):
            s[[0.5]]
        with pytest.raises(SafetensorError) as e:
            f.get_slice("nope")
        assert str(e.value) == "File does not contain tensor nope"


# -- carton's loader behind get_tensors and CUDA devices --------------------------


def test_torch_get_tensors_come_from_one_load_in_data_order(tmp_path):
    tensors = {
        "z_first": torch.arange(6, dtype=torch.float32).reshape(2, 3),
        "bools": torch.tensor([True, False, True]),
        "bf16": torch.arange(4, dtype=torch.bfloat16),
        "scalar": torch.tensor(3, dtype=torch.int64),
        "empty": torch.empty((0, 2), dtype=torch.int16),
    }
    p = tmp_path / "one.safetensors"
    pt_save_file(tensors, p)
    for backend in BACKENDS:
        with safe_open(p, framework="pt", backend=backend) as f:
            got = f.get_tensors()
            assert list(got) == f.offset_keys()
        for k, want in tensors.items():
            assert got[k].dtype == want.dtype and torch.equal(got[k], want), k
            if want.numel():
                # The loader's allocation: every tensor 256-byte aligned.
                assert got[k].data_ptr() % 256 == 0, k
        got["z_first"][0, 0] = 42  # writable, and its own bytes
        assert got["bf16"][0] == 0
        del f
        assert torch.equal(got["bools"], tensors["bools"])  # outlives the file


def test_a_pread_load_reads_the_descriptor_it_opened(tmp_path):
    p = tmp_path / "gone.safetensors"
    pt_save_file({"a": torch.arange(3)}, p)
    with safe_open(p, framework="pt", backend="pread") as f:
        os.unlink(p)
        assert torch.equal(f.get_tensors()["a"], torch.arange(3))


def test_a_pread_file_rewritten_after_opening_is_refused_not_mixed(tmp_path):
    p = tmp_path / "rewritten.safetensors"
    pt_save_file({"a": torch.arange(3)}, p)
    with safe_open(p, framework="pt", backend="pread") as f:
        with open(p, "r+b") as w:
            w.seek(-8, os.SEEK_END)
            w.write(b"XXXXXXXX")
        st = os.stat(p)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        with pytest.raises(SafetensorError) as e:
            f.get_tensors()
        assert e.value.code == "io error" and "changed while loading" in str(e.value)


def test_dtypes_torch_lacks_stop_get_tensors_with_safetensor_error(tmp_path):
    p = tmp_path / "u16.safetensors"
    save_file({"a": np.zeros(2, np.uint16)}, p)
    if hasattr(torch, "uint16"):
        pytest.skip("this torch has uint16")
    with safe_open(p, framework="pt") as f:
        with pytest.raises(SafetensorError) as e:
            f.get_tensors()
        assert e.value.code == "unsupported" and "U16" in str(e.value)


def fake_cuda_driver():
    import carton

    build = os.path.dirname(os.path.dirname(os.path.dirname(carton.__file__)))
    lib = os.path.join(build, "tests", "libfake_cuda.so")
    if not os.path.exists(lib):
        pytest.skip("the stand-in CUDA driver (tests/libfake_cuda.so) is not built")
    return lib


CUDA_CHILD = r"""
import ctypes, sys
import numpy as np
import carton.safetensors as st
from carton.safetensors.numpy import save_file
a = np.arange(12, dtype=np.float32).reshape(3, 4)
b = np.array([True, False])
save_file({"a": a, "b": b}, sys.argv[1])
f = st._carton.SafetensorsFile.open(sys.argv[1], sys.argv[2])
try:
    loaded = f.load(["b", "a"], 1)
except st.SafetensorError as e:
    print("error", e.code, e)
    sys.exit(0)
print(loaded.target, loaded.names())
assert loaded.copy_to_host("a") == a.tobytes() and loaded.copy_to_host("b") == b.tobytes()
get = ctypes.pythonapi.PyCapsule_GetPointer
get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
capsule, as_bytes = loaded.dlpack("a")
device_type, device_id = ctypes.cast(get(capsule, b"dltensor") + 8, ctypes.POINTER(ctypes.c_int32))[:2]
print("dlpack", device_type, device_id, as_bytes, loaded.dlpack("b")[1])
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cuda_load_goes_through_the_gpu_pipeline(tmp_path, backend):
    import subprocess
    import sys

    env = dict(os.environ, CARTON_LIBCUDA=fake_cuda_driver())
    args = [sys.executable, "-c", CUDA_CHILD, str(tmp_path / "g.safetensors"), backend]
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "cuda:1 ['b', 'a']"
    assert lines[1] == "dlpack 2 1 False True"  # kDLCUDA, GPU 1; bool as uint8
    env["CARTON_LIBCUDA"] = "/nonexistent/libcuda.so.1"
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("error unsupported "), out.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_slices_of_both_backends_match_numpy(tmp_path, backend):
    from test_safetensors import random_index

    rng = np.random.default_rng(81)
    arrays = {"a3": rng.standard_normal((4, 5, 6)), "u": rng.integers(0, 9, (7, 2), np.uint8)}
    p = tmp_path / "n.safetensors"
    save_file(arrays, p)
    with safe_open(p, framework="np", backend=backend) as f:
        for _ in range(400):
            name = list(arrays)[int(rng.integers(0, len(arrays)))]
            key = random_index(rng, arrays[name].shape)
            got = f.get_slice(name)[key]
            np.testing.assert_array_equal(got, arrays[name][key], err_msg=f"{name}[{key}]")
            assert got.flags.writeable and got.dtype == arrays[name].dtype


@pytest.mark.parametrize("backend", BACKENDS)
def test_torch_slices_match_numpy_whichever_path_reads_them(tmp_path, backend):
    from test_safetensors import random_index

    rng = np.random.default_rng(80)
    arrays = {
        "a2": rng.integers(-100, 100, (6, 7), dtype=np.int16),
        "a3": rng.standard_normal((4, 5, 6)).astype(np.float32),
        "b": rng.integers(0, 2, (5, 3)).astype(bool),
        "e": np.zeros((0, 3), np.float32),
    }
    p = tmp_path / "s.safetensors"
    save_file(arrays, p)
    loaded = 0
    with safe_open(p, framework="pt", backend=backend) as f:
        for _ in range(400):
            name = list(arrays)[int(rng.integers(0, len(arrays)))]
            key = random_index(rng, arrays[name].shape)
            want = arrays[name][key]
            got = f.get_slice(name)[key]
            assert tuple(got.shape) == np.shape(want), (name, key)
            np.testing.assert_array_equal(got.numpy(), want, err_msg=f"{name}[{key}]")
            loaded += got.numel() > 0 and got.data_ptr() % 256 == 0
    if backend == "pread":
        assert loaded > 100  # forward slices of a pread file come from the loader


def test_a_slice_the_loader_refuses_is_read_another_way(tmp_path):
    # Column 0 of 1.1 million rows: more separate runs than the loader reads
    # (load.h kMaxSliceRuns); the slice is read whole and selected instead.
    a = (np.arange(2_200_000) % 251).astype(np.uint8).reshape(1_100_000, 2)
    p = tmp_path / "runs.safetensors"
    save_file({"a": a}, p)
    with safe_open(p, framework="pt", backend="pread") as f:
        assert torch.equal(f.get_slice("a")[:, 0], torch.from_numpy(a[:, 0].copy()))
    with safe_open(p, framework="np", backend="pread") as f:
        np.testing.assert_array_equal(f.get_slice("a")[:, 1], a[:, 1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_files_without_bytes_load_through_every_path(tmp_path, backend):
    p = tmp_path / "none.safetensors"
    pt_save_file({}, p, metadata={"a": "b"})
    assert pt_load_file(p, backend=backend) == {} and load_file(p, backend=backend) == {}
    pt_save_file({"x": torch.empty(0), "y": torch.empty((2, 0))}, p)
    got = pt_load_file(p, backend=backend)
    assert got["x"].shape == (0,) and got["y"].shape == (2, 0)
    with safe_open(p, framework="pt", backend=backend) as f:
        assert f.get_slice("y")[1:].shape == (1, 0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA build of torch and a GPU")
@pytest.mark.parametrize("backend", BACKENDS)
def test_cuda_tensors_come_from_the_gpu_pipeline(tmp_path, backend):
    tensors = {
        "w": torch.randn(257, 129),
        "bools": torch.tensor([True, False, True]),
        "bf16": torch.arange(6, dtype=torch.bfloat16).reshape(2, 3),
        "scalar": torch.tensor(4),
        "empty": torch.empty((0, 3)),
    }
    p = tmp_path / "gpu.safetensors"
    pt_save_file(tensors, p)
    loaded = pt_load_file(p, device="cuda:0", backend=backend)
    assert list(loaded) == safe_open(p, framework="np").offset_keys()
    with safe_open(p, framework="pt", device="cuda:0", backend=backend) as f:
        one = f.get_tensor("w")
        rows = f.get_slice("w")[100:200, ::2]
        picked = f.get_slice("w")[[5, 1], :]
    torch.cuda.synchronize()
    for k, want in tensors.items():
        assert loaded[k].device == torch.device("cuda:0"), k
        assert loaded[k].dtype == want.dtype and torch.equal(loaded[k].cpu(), want), k
    assert one.is_cuda and torch.equal(one.cpu(), tensors["w"])
    assert rows.is_cuda and torch.equal(rows.cpu(), tensors["w"][100:200, ::2])
    assert picked.is_cuda and torch.equal(picked.cpu(), tensors["w"][[5, 1], :])
