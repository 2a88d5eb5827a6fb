"""carton.safetensors as the reference's Python API (0.8), with numpy: the
spec's byte-exact examples, every numpy dtype, slicing against numpy's own
indexing, hostile files, and zero-copy views."""

import os
import struct

import numpy as np
import pytest

import carton.safetensors as safetensors
from carton.safetensors import (
    SafetensorError,
    TensorSpec,
    deserialize,
    safe_open,
    serialize,
    serialize_file,
)
from carton.safetensors.numpy import load, load_file, save, save_file

# The reference's worked example: a 2x2 int32 tensor of zeros. The header is
# 60 bytes of JSON padded with spaces to 64 ("@"), so the data starts at 72.
EXAMPLE = (
    b'@\x00\x00\x00\x00\x00\x00\x00{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}'
    b"    " + b"\x00" * 16
)


def raw(header: str, data: bytes = b"", pad: bool = False) -> bytes:
    """A safetensors file from a header text and data bytes."""
    h = header.encode()
    if pad:
        h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def write(tmp_path, data: bytes, name="f.safetensors"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


# -- bytes equal the reference's ---------------------------------------------


def test_the_reference_worked_example_byte_for_byte(tmp_path):
    data = np.zeros((2, 2), dtype=np.int32)
    assert save({"test": data}) == EXAMPLE
    save_file({"test": data}, tmp_path / "e.safetensors")
    assert (tmp_path / "e.safetensors").read_bytes() == EXAMPLE
    data[1, 1] = 1
    assert save({"test": data}) == EXAMPLE[:-4] + b"\x01\x00\x00\x00"


def test_the_reference_example_reads_back_with_and_without_padding():
    (name, t), = deserialize(EXAMPLE)
    assert name == "test" and t["shape"] == [2, 2] and t["dtype"] == "I32"
    assert t["data"] == bytearray(16)
    unpadded = raw('{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}', b"\x00" * 16)
    assert unpadded[0] == ord("<")
    np.testing.assert_array_equal(load(unpadded)["test"], np.zeros((2, 2), np.int32))


def test_metadata_goes_first_and_an_empty_dict_is_kept_as_the_reference_keeps_it():
    t = {"a": np.zeros(1, np.uint8)}
    assert save(t, metadata={"format": "np"}) == raw(
        '{"__metadata__":{"format":"np"},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
        b"\x00",
        pad=True,
    )
    assert save(t, metadata={}) == raw(
        '{"__metadata__":{},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x00", pad=True
    )
    assert save(t) == raw('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x00", pad=True)


def test_tensors_are_ordered_by_dtype_then_name_as_the_reference_orders_them():
    t = {
        "z": np.array([1], np.uint8),
        "y": np.array([2], np.int32),
        "x": np.array([3], np.float32),
        "w": np.array([4], np.uint64),
        "v": np.array([5], np.float32),
    }
    expected = raw(
        '{"w":{"dtype":"U64","shape":[1],"data_offsets":[0,8]},'
        '"v":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},'
        '"x":{"dtype":"F32","shape":[1],"data_offsets":[12,16]},'
        '"y":{"dtype":"I32","shape":[1],"data_offsets":[16,20]},'
        '"z":{"dtype":"U8","shape":[1],"data_offsets":[20,21]}}',
        struct.pack("<Q", 4) + struct.pack("<ff", 5, 3) + struct.pack("<i", 2) + b"\x01",
        pad=True,
    )
    assert save(t) == expected


# -- every numpy dtype -------------------------------------------------------

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, np.float32, np.float64, np.complex64]
HEADER_NAMES = ["BOOL", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64", "F16", "F32",
                "F64", "C64"]


def sample(dtype, shape, rng):
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    if dtype == np.complex64:
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype,name", zip(DTYPES, HEADER_NAMES))
def test_every_numpy_dtype_round_trips(tmp_path, dtype, name):
    rng = np.random.default_rng(1)
    tensors = {
        "m": sample(dtype, (3, 5), rng),
        "scalar": sample(dtype, (), rng),
        "empty": sample(dtype, (0, 4), rng),
    }
    path = tmp_path / "t.safetensors"
    save_file(tensors, path, metadata={"dtype": name})
    for loaded in (load_file(path), load(path.read_bytes())):
        for k, v in tensors.items():
            assert loaded[k].dtype == v.dtype
            assert loaded[k].shape == v.shape
            np.testing.assert_array_equal(loaded[k], v)
    with safe_open(path, framework="np") as f:
        assert f.get_slice("m").get_dtype() == name
        assert f.metadata() == {"dtype": name}


def test_big_endian_and_non_contiguous_arrays_are_written_as_the_reference_writes_them():
    a = np.arange(12, dtype=">f4").reshape(3, 4)
    assert save({"a": a}) == save({"a": a.astype("<f4")})
    t = np.arange(12, dtype=np.int64).reshape(3, 4)
    assert save({"t": t.T}) == save({"t": np.ascontiguousarray(t.T)})
    assert save({"s": t[:, ::2]}) == save({"s": t[:, ::2].copy()})
    f = np.asfortranarray(t)
    assert save({"f": f}) == save({"f": t})


@pytest.mark.parametrize("dtype", [np.complex128, np.longdouble, "datetime64[s]", object, "U3"])
def test_dtypes_safetensors_lacks_are_refused(dtype):
    with pytest.raises(SafetensorError) as e:
        save({"x": np.zeros(2, dtype=dtype)})
    assert "Unknown dtype" in str(e.value)


# -- slicing ----------------------------------------------------------------


def random_index(rng, shape):
    """A random numpy index for `shape`: ints (negative too), slices with
    any bounds and steps, fewer indices than dimensions, and `...`."""
    parts = []
    for d in shape:
        kind = rng.integers(0, 4)
        if kind == 0 and d > 0:
            parts.append(int(rng.integers(-d, d)))
        elif kind == 1:
            parts.append(slice(None))
        else:
            def bound():
                return None if rng.random() < 0.3 else int(rng.integers(-d - 3, d + 4))

            step = None if rng.random() < 0.3 else int(rng.choice([-3, -2, -1, 1, 2, 3]))
            parts.append(slice(bound(), bound(), step))
    if rng.random() < 0.3:
        # `...` stands for the dimensions between a prefix and a suffix.
        i = int(rng.integers(0, len(parts) + 1))
        j = int(rng.integers(i, len(parts) + 1))
        parts = parts[:i] + [Ellipsis] + parts[j:]
    else:
        parts = parts[: int(rng.integers(0, len(parts) + 1))]
    return tuple(parts) if len(parts) != 1 or rng.random() < 0.5 else parts[0]


def test_slices_match_numpy_on_many_random_slices(tmp_path):
    rng = np.random.default_rng(2024)
    arrays = {
        "a1": rng.standard_normal(17).astype(np.float32),
        "a2": rng.integers(-100, 100, (6, 7), dtype=np.int16),
        "a3": rng.standard_normal((4, 5, 6)),
        "a4": rng.integers(0, 255, (3, 4, 2, 5), dtype=np.uint8),
        "b": rng.integers(0, 2, (5, 3)).astype(bool),
        "e": np.zeros((0, 3), np.float32),
    }
    path = tmp_path / "s.safetensors"
    save_file(arrays, path)
    checked = 0
    with safe_open(path, framework="np") as f:
        for _ in range(1500):
            name = list(arrays)[int(rng.integers(0, len(arrays)))]
            a = arrays[name]
            key = random_index(rng, a.shape)
            got = f.get_slice(name)[key]
            want = a[key]
            assert got.shape == np.shape(want), (name, key)
            np.testing.assert_array_equal(got, want, err_msg=f"{name}[{key}]")
            assert got.dtype == a.dtype
            checked += 1
        sl = f.get_slice("a3")
        assert sl.get_shape() == [4, 5, 6] and sl.get_dtype() == "F64"
        np.testing.assert_array_equal(sl[...], arrays["a3"])
        np.testing.assert_array_equal(sl[()], arrays["a3"])
        np.testing.assert_array_equal(sl[np.int64(1), ..., np.int32(-1)], arrays["a3"][1, ..., -1])
    assert checked == 1500


def test_bad_slices_raise_safetensor_error(tmp_path):
    path = tmp_path / "s.safetensors"
    save_file({"a": np.zeros((3, 4), np.float32)}, path)
    with safe_open(path, framework="np") as f:
        s = f.get_slice("a")
        with pytest.raises(SafetensorError) as e:
            s[3]
        assert "3" in str(e.value)
        with pytest.raises(SafetensorError):
            s[:, ::0]
        with pytest.raises(SafetensorError):
            s[0, 0, 0]
        with pytest.raises(SafetensorError):
            s[..., ...]
        with pytest.raises(SafetensorError):
            s[None]
        with pytest.raises(SafetensorError) as e:
            s[[0, 1], [0, 1]]
        assert "more than one list" in str(e.value)
        with pytest.raises(SafetensorError) as e:
            s[[0, 3]]
        assert "index 3 is out of range" in str(e.value)
        with pytest.raises(TypeError):
            s["x"]
        with pytest.raises(SafetensorError):
            f.get_slice("missing")


# -- hostile files ----------------------------------------------------------

ENTRY = '"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}'

HOSTILE = [
    ("file_too_small", b"\x01\x00\x00", "shorter than the 8-byte header"),
    ("header_too_large", struct.pack("<Q", 100_000_001) + b"{}", "100000000"),
    ("header_past_end", struct.pack("<Q", 1000) + b"{}", "1000"),
    ("header_no_brace", raw('["t"]'), "{"),
    ("invalid_json", raw('{"t":{"dtype":"F32",'), "json"),
    ("trailing_bytes", raw("{" + ENTRY + "}x", b"\x00" * 8), "expected end of input"),
    ("duplicate_key", raw("{" + ENTRY + "," + ENTRY + "}", b"\x00" * 8), '"t"'),
    ("missing_field", raw('{"t":{"dtype":"F32","shape":[2]}}', b"\x00" * 8), "data_offsets"),
    ("unknown_dtype", raw('{"t":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}}', b"\0" * 8), "F33"),
    ("invalid_shape", raw('{"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}', b"\0" * 8), "dimension 0 is -2"),
    ("invalid_offsets", raw('{"t":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}', b"\0" * 8), "data_offsets"),
    ("size_mismatch", raw('{"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', b"\0" * 8), "12"),
    ("data_gap", raw('{"t":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', b"\0" * 12), "hole"),
    (
        "data_overlap",
        raw('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
            '"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', b"\0" * 8),
        'tensor "b": data_offsets [4, 8] overlap',
    ),
    ("data_end_mismatch", raw("{" + ENTRY + "}", b"\x00" * 9), "data section is 9 bytes"),
    ("invalid_metadata", raw('{"__metadata__":{"k":1},' + ENTRY + "}", b"\0" * 8), "__metadata__"),
    ("header_not_utf8", struct.pack("<Q", 4) + b'{"\xff"', "UTF-8"),
    ("too_deep", raw('{"t":{"x":' + "[" * 40 + "]" * 40 + "}}"), "deeper than 16"),
]


@pytest.mark.parametrize("kind,data,needle", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_files_raise_safetensor_error_naming_the_rule(tmp_path, kind, data, needle):
    path = write(tmp_path, data)
    for opener in (lambda: safe_open(path, framework="np"), lambda: deserialize(data),
                   lambda: load_file(path), lambda: load(data)):
        with pytest.raises(SafetensorError) as e:
            opener()
        assert e.value.kind == kind, str(e.value)
        assert needle.lower() in str(e.value).lower(), str(e.value)
        assert e.value.code == ("unsupported" if kind == "unknown_dtype" else "corrupt")


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        safe_open(tmp_path / "nothing.safetensors", framework="np")


# -- zero copy --------------------------------------------------------------


def test_zero_copy_numpy_tensors_are_read_only_views_of_the_mapping(tmp_path):
    a = np.arange(1024, dtype=np.float32).reshape(32, 32)
    path = tmp_path / "z.safetensors"
    save_file({"a": a, "b": np.ones(8, np.int64)}, path)
    f = safe_open(path, framework="np", zero_copy=True)
    x, y = f.get_tensor("a"), f.get_tensor("a")
    assert np.shares_memory(x, y)  # the same bytes, not two copies
    mapping = x.base
    assert isinstance(mapping, safetensors._carton.SafetensorsFile)
    whole = np.frombuffer(mapping, dtype=np.uint8)
    assert whole.size == os.path.getsize(path)
    assert np.shares_memory(x, whole)
    _, _, (begin, _) = mapping.info("a")
    assert x.ctypes.data == whole.ctypes.data + mapping.data_start + begin
    assert not x.flags.writeable and not x.flags.owndata
    with pytest.raises(ValueError):
        x[0, 0] = 1
    with pytest.raises(ValueError):
        x.setflags(write=True)
    # The arrays keep the mapping: closing, dropping the file and removing it
    # changes nothing for them.
    f.__exit__(None, None, None)
    del f, mapping, whole
    os.unlink(path)
    np.testing.assert_array_equal(x, a)
    np.testing.assert_array_equal(y.reshape(-1)[:4], [0, 1, 2, 3])


def test_load_and_load_file_give_writable_copies_and_views_on_request(tmp_path):
    path = tmp_path / "c.safetensors"
    save_file({"a": np.arange(4, dtype=np.int32)}, path)
    copied = load(path.read_bytes())["a"]
    copied[0] = 7
    from_file = load_file(path)["a"]
    from_file[1] = 9
    viewed = load_file(path, zero_copy=True)["a"]
    assert not viewed.flags.writeable
    np.testing.assert_array_equal(viewed, [0, 1, 2, 3])


# -- the rest of the API ----------------------------------------------------


def test_safe_open_api(tmp_path):
    path = tmp_path / "api.safetensors"
    save_file({"b": np.zeros(3, np.uint8), "a": np.zeros(2, np.float64)}, path, metadata={"k": "v"})
    with safe_open(str(path), framework="numpy", device="cpu") as f:
        assert f.keys() == ["a", "b"]
        assert f.offset_keys() == ["a", "b"]  # F64 before U8 in the data
        assert f.metadata() == {"k": "v"}
        assert list(f) == ["a", "b"] and len(f) == 2 and "a" in f and "c" not in f
        with pytest.raises(SafetensorError) as e:
            f.get_tensor("c")
        assert str(e.value) == "File does not contain tensor c"  # the reference's words
    with pytest.raises(SafetensorError) as e:
        f.keys()
    assert str(e.value) == "File is closed"
    path2 = tmp_path / "nometa.safetensors"
    save_file({"a": np.zeros(1, np.int8)}, path2)
    with safe_open(path2, framework="np") as f:
        assert f.metadata() is None
    with pytest.raises(SafetensorError) as e:
        safe_open(path2, framework="tensorflow_nope")
    assert "framework" in str(e.value)
    with pytest.raises(SafetensorError) as e:
        safe_open(path2, framework="np", device="cuda:0")
    assert str(e.value) == "Device cuda:0 is not supported for framework numpy"


def spec(array: np.ndarray) -> TensorSpec:
    """The TensorSpec of a C-contiguous array (which the caller keeps)."""
    return TensorSpec(
        dtype=array.dtype.name, shape=array.shape, data_ptr=array.ctypes.data, data_len=array.nbytes
    )


def test_top_level_serialize_takes_tensor_specs(tmp_path):
    w, m = np.array([1, 2], np.float32), np.array([True, False])
    data = {"w": spec(w), "m": spec(m)}
    out = serialize(data, metadata={"a": "b"})
    assert out == save({"w": w, "m": m}, metadata={"a": "b"})
    serialize_file(data, tmp_path / "s.safetensors")
    assert (tmp_path / "s.safetensors").read_bytes() == serialize(data)
    (name, t), _ = deserialize(out)
    assert (name, t["dtype"], t["shape"]) == ("w", "F32", [2])
    one = np.zeros(1, np.int8)
    with pytest.raises(SafetensorError) as e:
        serialize({"x": TensorSpec(dtype="int8", shape=[2], data_ptr=one.ctypes.data, data_len=1)})
    assert str(e.value).startswith("Error while serializing: ") and '"x"' in str(e.value)
    with pytest.raises(SafetensorError) as e:
        serialize({"x": TensorSpec(dtype="int8", shape=[1], data_ptr=0, data_len=1)})
    assert "data_ptr is 0" in str(e.value)
    with pytest.raises(SafetensorError):
        serialize({"__metadata__": spec(one)})
    with pytest.raises(TypeError):
        serialize(data, metadata={"a": 1})


def test_a_failed_save_file_leaves_nothing(tmp_path):
    path = tmp_path / "keep.safetensors"
    save_file({"a": np.zeros(2, np.int8)}, path)
    before = path.read_bytes()
    one = np.zeros(1, np.int8)
    with pytest.raises(SafetensorError):
        serialize_file(
            {"x": TensorSpec(dtype="int8", shape=[3], data_ptr=one.ctypes.data, data_len=1)}, path
        )
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.safetensors"]


def test_the_package_exports_the_reference_names():
    for name in ("safe_open", "serialize", "serialize_file", "deserialize", "SafetensorError"):
        assert hasattr(safetensors, name)
    assert safetensors.__version__.startswith("0.8")


def test_arrays_are_writable_as_the_reference_s_and_views_on_request(tmp_path):
    path = tmp_path / "w.safetensors"
    save_file({"w": np.arange(4, dtype=np.float32)}, str(path))
    d = load_file(str(path))
    d["w"] += 1  # the reference's arrays are writable; so are these
    assert d["w"].tolist() == [1, 2, 3, 4]
    assert load_file(str(path))["w"].tolist() == [0, 1, 2, 3]  # the file is unchanged
    with safetensors.safe_open(str(path), framework="np") as f:
        w = f.get_tensor("w")
        assert w.flags.writeable and w.flags.owndata
    view = load_file(str(path), zero_copy=True)["w"]
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view += 1
    with safetensors.safe_open(str(path), framework="np", zero_copy=True) as f:
        assert not f.get_tensor("w").flags.writeable
