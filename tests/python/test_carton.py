"""carton from Python: pack, load through the cache, infer and self-test
through the noop runner, info, verify, hash, shrink, load_unpacked, and the
errors a user meets."""

import hashlib
import json
import os
import shutil
import signal
import zipfile

import numpy as np
import pytest

import carton
from conftest import noop_specs, run_cli, runner_available


def test_pack_load_infer_and_self_test(noop_carton, x):
    with carton.load(noop_carton) as model:
        out = model.infer({"x": x, "label": np.array(["u", "v"])})
        assert set(out) == {"x", "label"}
        np.testing.assert_array_equal(out["x"], x)
        assert out["x"].dtype == np.float32
        assert out["x"].flags.writeable  # writable, though not a copy (see below)
        assert out["label"].dtype == object
        assert list(out["label"]) == ["u", "v"]
        report = model.self_test()
        assert report.passed and bool(report)
        assert [t.name for t in report.tests] == ["identity"]
        assert sorted(o.name for o in report.tests[0].outputs) == ["label", "x"]
        assert all(o.passed for o in report.tests[0].outputs)
    assert model.closed


def test_outputs_outlive_the_next_call(noop_carton):
    with carton.load(noop_carton) as model:
        first = model.infer({"x": np.ones((2, 3), np.float32), "label": ["a"]})
        model.infer({"x": np.zeros((2, 3), np.float32), "label": ["b"]})
        np.testing.assert_array_equal(first["x"], np.ones((2, 3), np.float32))
        assert list(first["label"]) == ["a"]


def output_arenas():
    """How many of the runner's output arenas this process has mapped."""
    with open("/proc/self/maps") as f:
        return sum("/memfd:carton-outputs" in line for line in f)


def big_inputs(n, seed=3):
    rng = np.random.default_rng(seed)
    return [
        {"x": rng.standard_normal((1 << 18, 3), dtype=np.float32), "label": [str(i)]}
        for i in range(n)
    ]


def test_outputs_are_not_copied_and_dropped_ones_free_their_arena(noop_carton):
    before = output_arenas()
    ins = big_inputs(3)
    with carton.load(noop_carton) as model:
        a = model.infer(ins[0])
        b = model.infer(ins[1])
        # Both held: each in an arena of its own, as it came, no copy.
        assert output_arenas() - before == 2
        assert not a["x"].flags.owndata and not b["x"].flags.owndata
        assert not np.shares_memory(a["x"], b["x"])
        np.testing.assert_array_equal(a["x"], ins[0]["x"])
        np.testing.assert_array_equal(b["x"], ins[1]["x"])
        del a, b
        # The usual loop alternates between the two arenas.
        for i in range(10):
            out = model.infer(ins[i % 3])
            np.testing.assert_array_equal(out["x"], ins[i % 3]["x"])
            assert list(out["label"]) == [str(i % 3)]
        assert output_arenas() - before == 2
        # Writable: writing into an output changes neither the runner's later
        # outputs nor anything else.
        out["x"][:] = -1
        again = model.infer(ins[0])
        np.testing.assert_array_equal(again["x"], ins[0]["x"])
        assert (out["x"] == -1).all()
        # A view keeps the arena reserved like the array it came from.
        view = again["x"][5:9]
        del again, out
        for i in range(3):
            out = model.infer(ins[1])
            np.testing.assert_array_equal(out["x"], ins[1]["x"])
        np.testing.assert_array_equal(view, ins[0]["x"][5:9])
        assert output_arenas() - before == 3


def test_holding_many_outputs_gives_one_off_arenas(noop_carton):
    before = output_arenas()
    ins = big_inputs(11, seed=5)
    with carton.load(noop_carton) as model:
        held = [model.infer(i) for i in ins]
        # 8 arenas the runner keeps, then one-offs: every output intact.
        assert output_arenas() - before == 11
        for out, i in zip(held, ins):
            np.testing.assert_array_equal(out["x"], i["x"])
        del out
        del held[8:]  # the one-offs' memory goes with their arrays
        assert output_arenas() - before == 8
        del held
        for i in ins[:4]:
            np.testing.assert_array_equal(model.infer(i)["x"], i["x"])
        assert output_arenas() - before == 8


def runner_pids():
    """The carton-runner-noop processes this process started."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if ppid == os.getpid() and b"carton-runner-noop" in cmdline:
            pids.append(int(entry))
    return pids


def test_outputs_outlive_a_runner_that_dies(noop_carton):
    (inputs,) = big_inputs(1)
    others = set(runner_pids())
    with carton.load(noop_carton) as model:
        out = model.infer(inputs)
        (pid,) = set(runner_pids()) - others
        os.kill(pid, signal.SIGKILL)
        died = r"exited with signal 9 \(Killed\) while inferring"
        with pytest.raises(carton.InternalError, match=died):
            model.infer(inputs)
        with pytest.raises(carton.InternalError, match="no longer usable"):
            model.infer(inputs)
        # What the runner returned before it died is still mapped here.
        np.testing.assert_array_equal(out["x"], inputs["x"])


def test_infer_takes_numbers_str_and_lists(noop_carton):
    with carton.load(noop_carton) as model:
        out = model.infer({"x": [[1, 2, 3]], "label": ["one"]})
        # Python numbers take the declared dtype of the input.
        assert out["x"].dtype == np.float32
        np.testing.assert_array_equal(out["x"], [[1, 2, 3]])
        assert out["label"].shape == (1,) and out["label"][0] == "one"
        # A str is a rank-0 string tensor: label is declared ["n"], so it is
        # refused before the model runs.
        with pytest.raises(carton.InvalidArgument, match='input "label"'):
            model.infer({"x": [[1, 2, 3]], "label": "one"})
        out = model.infer({"x": np.arange(6, dtype=np.float32)[::2].reshape(1, 3), "label": []})
        np.testing.assert_array_equal(out["x"], [[0, 2, 4]])  # a strided view, copied once


def test_a_second_load_is_a_cache_hit_with_the_same_hash(noop_carton, tmp_path):
    copy = tmp_path / "copy.carton"
    shutil.copy(noop_carton, copy)
    with carton.load(noop_carton) as a, carton.load(copy) as b:
        assert a.model_dir == b.model_dir
        assert a.info.manifest_sha256 == b.info.manifest_sha256 == carton.hash(noop_carton)
        assert os.environ["CARTON_CACHE_DIR"] in a.model_dir


def test_model_info_has_every_field_and_the_self_test_tensors(noop_carton, x):
    with carton.load(noop_carton) as model:
        info = model.info
        assert info.model_name == "noop-test"
        assert info.short_description == "returns its inputs"
        assert info.license == "MIT"
        assert info.model_description is None and info.homepage is None
        assert info.runner == carton.RunnerInfo("noop", ">=1", 1, {})
        assert info.inputs == [
            carton.TensorSpec("x", "float32", [None, 3], description="features"),
            carton.TensorSpec("label", "string", ["n"]),
        ]
        assert len(info.manifest_sha256) == 64
        (test,) = info.self_tests
        assert test.name == "identity"
        np.testing.assert_array_equal(test.inputs["x"], x)
        assert not test.inputs["x"].flags.writeable  # a view of the loaded carton
        assert list(test.expected_out["label"]) == ["a", "b"]
        assert model.runner_path.endswith("carton-runner-noop")


def test_get_model_info_reads_metadata_without_loading(noop_carton):
    info = carton.get_model_info(noop_carton)
    assert info.model_name == "noop-test"
    # Laid out by the library, as `carton pack --self-test` lays them out.
    assert info.self_tests[0].inputs == {
        "x": "@tensor_data/self_test_1_input_x",
        "label": "@tensor_data/self_test_1_input_label",
    }
    paths = {f["path"] for f in info.files}
    assert {"carton.toml", "model/notes.txt", "model/weights.bin", "model/sub/config.json"} <= paths
    assert {t["name"] for t in info.tensors} >= {"self_test_1_input_x", "self_test_1_output_label"}
    assert info.manifest_sha256 == carton.hash(noop_carton)
    assert not os.path.exists(os.environ["CARTON_CACHE_DIR"])  # nothing was cached


def test_verify_reports_a_good_carton(noop_carton):
    report = carton.verify(noop_carton)
    assert report.ok and bool(report)
    assert report.valid  # the earlier name of ok
    assert report.problems == [] and report.warnings == []
    assert report.manifest_hash == carton.hash(noop_carton)
    assert report.files_hashed >= 4
    assert report.bytes_hashed > 256 * 1024


def test_verify_reports_unknown_carton_toml_keys_as_warnings(tmp_path, carton_bin):
    d = tmp_path / "m"
    (d / "model").mkdir(parents=True)
    (d / "model" / "w.bin").write_bytes(b"w")
    (d / "carton.toml").write_text(
        'spec_version = 1\nlicence = "MIT"\n'
        '[runner]\nrunner_name = "noop"\nrequired_framework_version = "=1.0.0"\n'
    )
    out = tmp_path / "m.carton"
    run_cli(carton_bin, "pack", "-q", str(d), "-o", str(out))
    report = carton.verify(out)
    assert report.ok and report.problems == []
    assert len(report.warnings) == 1
    assert 'unknown key "licence" (did you mean "license"?)' in report.warnings[0]


def damage(path, marker_offset=1000):
    """Flips one byte inside model/weights.bin's stored bytes."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("model/weights.bin")
        assert info.compress_type == zipfile.ZIP_STORED
        data = z.read("model/weights.bin")
    raw = bytearray(open(path, "rb").read())
    at = raw.find(data[:64])
    assert at > 0
    raw[at + marker_offset] ^= 0xFF
    open(path, "wb").write(bytes(raw))


def test_a_damaged_carton_names_the_entry(noop_carton):
    damage(noop_carton)
    report = carton.verify(noop_carton)
    assert not report.ok
    assert any(p.where == "model/weights.bin" for p in report.problems), report.problems
    with pytest.raises(carton.Corrupt) as e:
        carton.load(noop_carton)
    assert "model/weights.bin" in str(e.value)
    assert e.value.code == "corrupt"
    assert isinstance(e.value, carton.CartonError)


def test_not_a_carton(tmp_path):
    bad = tmp_path / "bad.carton"
    bad.write_bytes(b"not a zip at all" * 10)
    with pytest.raises(carton.Corrupt):
        carton.load(bad)
    with pytest.raises(carton.NotFound) as e:
        carton.load(tmp_path / "missing.carton")
    assert isinstance(e.value, FileNotFoundError)
    assert "missing.carton" in str(e.value)


def test_a_missing_runner_lists_the_runners_found(noop_carton):
    with pytest.raises(carton.NotFound) as e:
        carton.load(noop_carton, runner_name="nosuchrunner")
    message = str(e.value)
    assert "nosuchrunner" in message
    assert "noop" in message  # the runners found, and why each was rejected


def test_framework_version_override_applies_to_selection(noop_carton):
    with pytest.raises(carton.NotFound) as e:
        carton.load(noop_carton, required_framework_version="=9.9")
    assert "9.9" in str(e.value)
    with carton.load(noop_carton, required_framework_version="=1.0.0") as model:
        assert model.infer({"x": np.ones((1, 3), np.float32), "label": ["a"]})["x"].shape == (1, 3)


def test_runner_opts_reach_the_runner(noop_carton, capfd):
    with carton.load(noop_carton, runner_opts={"threads": 4, "mode": "fast"}):
        pass
    err = capfd.readouterr().err
    assert '[noop] carton-runner-noop: ignoring unknown option "threads"' in err
    assert 'ignoring unknown option "mode"' in err


def test_a_wrong_dtype_is_refused_naming_the_tensor(noop_carton, model_dir, tmp_path):
    with carton.load(noop_carton) as model:
        with pytest.raises(carton.InvalidArgument) as e:
            model.infer({"x": np.ones((1, 3), np.float16), "label": ["a"]})
        assert 'tensor "x"' in str(e.value) and "float16" in str(e.value)
        with pytest.raises(carton.InvalidArgument) as e:
            model.infer({"x": np.ones((1, 3), np.complex64), "label": ["a"]})
        with pytest.raises(carton.InvalidArgument):
            model.infer({"x": [1, "a"], "label": ["a"]})
        with pytest.raises(ValueError):  # InvalidArgument is a ValueError
            model.infer({"x": object(), "label": ["a"]})
    with pytest.raises(carton.InvalidArgument) as e:
        carton.pack(
            model_dir,
            output=tmp_path / "f16.carton",
            runner_name="noop",
            required_framework_version=">=1",
            inputs=[carton.TensorSpec("x", "float16", [3])],
        )
    assert "float16" in str(e.value)
    assert not (tmp_path / "f16.carton").exists()


def test_close_is_idempotent_and_a_closed_model_refuses(noop_carton):
    model = carton.load(noop_carton)
    model.close()
    model.close()
    assert model.closed
    with pytest.raises(carton.InvalidArgument) as e:
        model.infer({"x": np.ones((1, 3), np.float32), "label": ["a"]})
    assert "closed" in str(e.value)


def test_pack_gives_the_bytes_the_cli_gives(model_dir, tmp_path, carton_bin):
    # Without self-tests: the CLI's --runner flags write the same carton.toml.
    py = carton.pack(
        model_dir,
        output=tmp_path / "py.carton",
        runner_name="noop",
        required_framework_version=">=1",
        model_name="same",
        short_description="same bytes",
        license="MIT",
        runner_opts={"threads": 2},
    )
    layout = tmp_path / "layout"
    shutil.copytree(model_dir, layout / "model")
    cli = tmp_path / "cli.carton"
    run_cli(carton_bin, "pack", str(layout), "-o", str(cli), "--runner", "noop",
            "--framework-version", ">=1", "--name", "same", "--description", "same bytes",
            "--license", "MIT", "--opt", "threads=2")
    assert open(py, "rb").read() == open(cli, "rb").read()


def test_pack_with_self_tests_gives_the_cli_bytes_for_the_same_directory(
    noop_carton, tmp_path, carton_bin
):
    # The same directory: carton.toml, model/, tensor_data/ and misc/ as
    # pack wrote them (unpacked by the CLI).
    layout = tmp_path / "layout"
    run_cli(carton_bin, "unpack", str(noop_carton), str(layout))
    assert (layout / "tensor_data" / "index.toml").exists()
    cli = tmp_path / "cli.carton"
    run_cli(carton_bin, "pack", str(layout), "-o", str(cli))
    assert open(noop_carton, "rb").read() == open(cli, "rb").read()


def test_pack_a_single_file_and_every_compression(tmp_path, x):
    f = tmp_path / "model.bin"
    f.write_bytes(bytes(range(256)) * 512)
    for method in ("stored", "deflate", "zstd", "auto"):
        out = carton.pack(
            f,
            output=tmp_path / f"{method}.carton",
            runner_name="noop",
            required_framework_version=">=1",
            compression=method,
        )
        assert carton.verify(out).ok
        info = carton.get_model_info(out)
        (entry,) = [e for e in info.files if e["path"] == "model/model.bin"]
        # auto: zstd where it pays, as for this repetitive file.
        assert entry["method"] == ("zstd" if method == "auto" else method)
    with pytest.raises(carton.InvalidArgument):
        carton.pack(f, output=tmp_path / "x.carton", runner_name="noop",
                    required_framework_version=">=1", compression="lzma")


def test_pack_a_snapshot_whose_files_link_outside_it(tmp_path, carton_bin):
    # A Hugging Face cache snapshot: relative links into ../../blobs/, which
    # would point nowhere from a staging copy.
    blobs = tmp_path / "hub" / "blobs"
    blobs.mkdir(parents=True)
    (blobs / "aaaa").write_bytes(b"weights " * 1000)
    (blobs / "bbbb").write_text('{"hidden": 8}\n')
    snap = tmp_path / "hub" / "snapshots" / "rev1"
    snap.mkdir(parents=True)
    (snap / "model.safetensors").symlink_to("../../blobs/aaaa")
    (snap / "config.json").symlink_to("../../blobs/bbbb")
    (snap / "alias.json").symlink_to("config.json")  # a link inside the folder
    out = carton.pack(snap, output=tmp_path / "snap.carton", runner_name="noop",
                      required_framework_version=">=1")
    assert carton.verify(out).ok
    files = {e["path"]: e["size"] for e in carton.get_model_info(out).files}
    assert files["model/model.safetensors"] == 8000
    assert files["model/config.json"] == len('{"hidden": 8}\n')
    assert files["model/alias.json"] == len('{"hidden": 8}\n')
    # The CLI packs the same folder into the same bytes.
    cli = tmp_path / "cli.carton"
    run_cli(carton_bin, "pack", str(snap), "-o", str(cli), "--runner", "noop",
            "--framework-version", ">=1")
    assert open(out, "rb").read() == open(cli, "rb").read()


def test_pack_default_output_and_misc_files_and_examples(model_dir, x):
    out = carton.pack(
        model_dir,
        runner_name="noop",
        required_framework_version=">=1",
        inputs=[carton.TensorSpec("x", "float32", None), carton.TensorSpec("img", "string", None)],
        outputs=[carton.TensorSpec("x", "float32", None)],
        examples=[carton.Example(name="e", inputs={"x": x, "img": b"\x89PNG"}, sample_out={"x": x})],
        misc_files={"docs/readme.md": b"# hello\n"},
    )
    assert out.endswith("model.carton") and os.path.isfile(out)
    assert carton.verify(out).ok
    with carton.load(out) as model:
        (example,) = model.info.examples
        assert isinstance(example.inputs["img"], carton.MiscFile)
        assert example.inputs["img"].read() == b"\x89PNG"
        np.testing.assert_array_equal(example.sample_out["x"], x)
        paths = {m.path: m.read() for m in model.info.misc_files}
        assert paths["misc/docs/readme.md"] == b"# hello\n"


def test_pack_into_the_model_directory_leaves_out_the_carton_and_the_staging(model_dir):
    out = model_dir / "model.carton"
    for _ in range(2):  # the second time, the first carton is there
        carton.pack(model_dir, output=out, runner_name="noop", required_framework_version=">=1")
        files = carton.get_model_info(out).files
        paths = sorted(e["path"] for e in files if e["path"].startswith("model/"))
        assert paths == ["model/notes.txt", "model/sub/config.json", "model/weights.bin"]
    assert sorted(p.name for p in model_dir.iterdir()) == [
        "model.carton", "notes.txt", "sub", "weights.bin"
    ]


def test_pack_refuses_bad_arguments_naming_them(model_dir, tmp_path):
    base = dict(output=tmp_path / "o.carton", runner_name="noop", required_framework_version=">=1")
    with pytest.raises(carton.InvalidArgument) as e:
        carton.pack(model_dir, misc_files={"../escape": b"x"}, **base)
    assert "../escape" in str(e.value)
    with pytest.raises(carton.InvalidArgument) as e:
        carton.pack(model_dir, model_name=3, **base)
    assert "model_name" in str(e.value)
    with pytest.raises(carton.InvalidArgument) as e:
        carton.pack(model_dir, self_tests=[carton.SelfTest(inputs={"x": {"a": 1}})], **base)
    assert "self_tests[0]" in str(e.value) and 'tensor "x"' in str(e.value)
    with pytest.raises(carton.InvalidArgument):
        carton.pack(model_dir, output=tmp_path / "o.carton", runner_name="noop",
                    required_framework_version="not a requirement")
    with pytest.raises(carton.NotFound):
        carton.pack(tmp_path / "nothing", **base)
    assert not (tmp_path / "o.carton").exists()
    assert [p for p in os.listdir(tmp_path) if p.startswith(".carton-stage")] == []


def test_a_server_that_ignores_range_gives_a_warning(noop_carton, http_server, capfd):
    root, base = http_server  # Python's http.server answers Range with 200
    shutil.copy(noop_carton, root / "m.carton")
    with pytest.warns(RuntimeWarning, match="m.carton: the server ignores range requests"):
        info = carton.get_model_info(f"{base}/m.carton")
    assert info.manifest_sha256 == carton.hash(noop_carton)
    assert "ignores range" not in capfd.readouterr().err


def test_shrink_links_files_and_load_fetches_them(noop_carton, http_server, tmp_path, x):
    root, base = http_server
    data = open(noop_carton, "rb").read()
    info = carton.get_model_info(noop_carton)
    with zipfile.ZipFile(noop_carton) as z:
        weights = z.read("model/weights.bin")
    sha = hashlib.sha256(weights).hexdigest()
    (root / sha).write_bytes(weights)
    small = carton.shrink(noop_carton, {sha: [f"{base}/{sha}"]}, output=tmp_path / "small.carton")
    assert os.path.getsize(small) < len(data) - 200 * 1024
    assert carton.hash(small) == info.manifest_sha256  # the manifest hash stays
    report = carton.verify(small)
    assert report.ok and report.linked_files == 1
    linked = [f for f in carton.get_model_info(small).files if f["linked"]]
    assert [f["path"] for f in linked] == ["model/weights.bin"]
    # Loading fetches the linked file from the server (the GIL is released
    # meanwhile, so the server thread answers).
    with carton.load(small) as model:
        assert open(os.path.join(model.model_dir, "weights.bin"), "rb").read() == weights
        assert model.self_test().passed
    with pytest.raises(carton.InvalidArgument) as e:
        carton.shrink(noop_carton, {"0" * 64: ["http://127.0.0.1/x"]}, output=tmp_path / "n.carton")
    assert "0" * 64 in str(e.value)
    with pytest.raises(carton.InvalidArgument):
        carton.shrink(noop_carton, {sha: ["ftp://example.com/x"]}, output=tmp_path / "n.carton")


def test_pack_with_linked_files(model_dir, tmp_path):
    sha = hashlib.sha256((model_dir / "weights.bin").read_bytes()).hexdigest()
    out = carton.pack(
        model_dir,
        output=tmp_path / "linked.carton",
        runner_name="noop",
        required_framework_version=">=1",
        linked_files={sha: ["https://example.com/blobs/" + sha]},
    )
    report = carton.verify(out)
    assert report.ok and report.linked_files == 1
    with zipfile.ZipFile(out) as z:
        assert "model/weights.bin" not in z.namelist()
        assert f"https://example.com/blobs/{sha}" in z.read("LINKS").decode()


def test_load_unpacked_uses_the_folder_in_place(model_dir, x):
    model = carton.load_unpacked(
        model_dir,
        runner_name="noop",
        required_framework_version=">=1",
        model_name="unpacked",
        self_tests=[carton.SelfTest(inputs={"x": x}, expected_out={"x": x})],
        **noop_specs(),
    )
    with model:
        assert model.info.model_name == "unpacked"
        assert model.info.manifest_sha256 is None
        assert os.path.realpath(model.model_dir) == os.path.realpath(model_dir)
        assert model.self_test().passed
        np.testing.assert_array_equal(model.infer({"x": x, "label": ["q"]})["x"], x)
        stage = os.path.dirname(model.model_dir)
    assert not os.path.exists(stage)  # the staging directory went with the model
    assert (model_dir / "weights.bin").exists()


def test_errors_keep_code_and_message_through_the_hierarchy():
    for cls, base in [
        (carton.InvalidArgument, ValueError),
        (carton.NotFound, FileNotFoundError),
        (carton.IOError, OSError),
        (carton.NetworkError, ConnectionError),
        (carton.InternalError, RuntimeError),
    ]:
        assert issubclass(cls, carton.CartonError) and issubclass(cls, base)
    assert issubclass(carton.Corrupt, carton.CartonError)
    assert issubclass(carton.Unsupported, carton.CartonError)


def test_hash_verify_and_info_take_oci_references(noop_carton, oci_registry, carton_bin, tmp_path):
    ref = f"oci://{oci_registry}/team/noop:v1"
    run_cli(carton_bin, "push", "-q", str(noop_carton), ref)
    assert carton.hash(ref) == carton.hash(noop_carton)
    report = carton.verify(ref)
    assert report.ok, report.problems
    assert report.manifest_hash == carton.hash(noop_carton)
    assert carton.get_model_info(ref).model_name == carton.get_model_info(noop_carton).model_name
    # Nothing pulled stays behind.
    downloads = tmp_path / "cache" / "downloads"
    assert not downloads.exists() or list(downloads.iterdir()) == []


def test_a_bad_location_raises_at_once_naming_the_rule():
    with pytest.raises(carton.InvalidArgument, match="repository component"):
        carton.hash("oci://127.0.0.1:1/Bad")
    with pytest.raises(carton.InvalidArgument, match='"ftp" is not a scheme carton reads'):
        carton.verify("ftp://example.com/m.carton")


def test_pack_with_linked_files_writes_what_pack_then_shrink_writes(model_dir, tmp_path):
    # One pass: the same bytes as packing and then shrinking, and nothing
    # else is written beside the output.
    sha = hashlib.sha256((model_dir / "weights.bin").read_bytes()).hexdigest()
    urls = {sha: ["https://example.com/blobs/" + sha]}
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    direct = carton.pack(
        model_dir, output=out_dir / "direct.carton", runner_name="noop",
        required_framework_version=">=1", linked_files=urls,
    )
    assert sorted(os.listdir(out_dir)) == ["direct.carton"]
    whole = carton.pack(
        model_dir, output=tmp_path / "whole.carton", runner_name="noop",
        required_framework_version=">=1",
    )
    shrunk = carton.shrink(whole, urls, output=tmp_path / "shrunk.carton")
    assert open(direct, "rb").read() == open(shrunk, "rb").read()
    with pytest.raises(carton.InvalidArgument, match="names no file"):
        carton.pack(model_dir, output=tmp_path / "x.carton", runner_name="noop",
                    required_framework_version=">=1", linked_files={"0" * 64: ["https://e.com/x"]})


def _same_bytes_as_cli(carton_bin, tmp_path, path, cli_flags, **kwargs):
    cli_out = tmp_path / "cli.carton"
    run_cli(carton_bin, "pack", "-q", str(path), "-o", str(cli_out), *cli_flags)
    py_out = carton.pack(path, output=tmp_path / "py.carton", **kwargs)
    assert open(py_out, "rb").read() == open(cli_out, "rb").read()
    return py_out


def test_pack_of_a_folder_with_model_dir_is_the_cli_s(carton_bin, tmp_path):
    # The carton layout: carton.toml, model/, tensor_data/, misc/. Packed as
    # it is, not as model/model/...
    d = tmp_path / "layout"
    (d / "model").mkdir(parents=True)
    (d / "model" / "main.py").write_text("def get_model():\n    return None\n")
    (d / "misc").mkdir()
    (d / "misc" / "notes.txt").write_text("notes\n")
    (d / "carton.toml").write_text(
        'spec_version = 1\nmodel_name = "layout"\n[runner]\nrunner_name = "noop"\n'
        'required_framework_version = ">=1"\nrunner_compat_version = 1\n'
    )
    out = _same_bytes_as_cli(carton_bin, tmp_path, d, [])
    with zipfile.ZipFile(out) as z:
        names = z.namelist()
    assert "model/main.py" in names and "misc/notes.txt" in names
    assert not any(n.startswith("model/model/") for n in names)


def test_pack_of_a_flat_folder_is_the_cli_s(carton_bin, tmp_path, model_dir):
    out = _same_bytes_as_cli(
        carton_bin, tmp_path, model_dir,
        ["--runner", "noop", "--framework-version", ">=1", "--name", "flat"],
        runner_name="noop", required_framework_version=">=1", model_name="flat",
    )
    with zipfile.ZipFile(out) as z:
        assert "model/sub/config.json" in z.namelist()


def test_pack_of_a_single_file_is_the_cli_s(carton_bin, tmp_path, model_dir):
    out = _same_bytes_as_cli(
        carton_bin, tmp_path, model_dir / "weights.bin",
        ["--runner", "noop", "--framework-version", ">=1"],
        runner_name="noop", required_framework_version=">=1",
    )
    with zipfile.ZipFile(out) as z:
        assert "model/weights.bin" in z.namelist()


def test_pack_without_a_description_needs_carton_toml(model_dir, tmp_path):
    with pytest.raises(carton.InvalidArgument, match="no carton.toml"):
        carton.pack(model_dir, output=tmp_path / "m.carton")
    with pytest.raises(carton.InvalidArgument, match="together"):
        carton.pack(model_dir, output=tmp_path / "m.carton", runner_name="noop")


def test_infer_checks_inputs_against_the_declared_ones(noop_carton, x):
    # As `carton infer` does: the model never sees inputs that break [[input]].
    with carton.load(noop_carton) as model:
        with pytest.raises(carton.InvalidArgument, match='input "x"'):
            model.infer({"x": np.ones((2, 4), np.float32), "label": ["a", "b"]})
        with pytest.raises(carton.InvalidArgument, match='input "x"'):
            model.infer({"x": np.ones((2, 3), np.int64), "label": ["a", "b"]})
        with pytest.raises(carton.InvalidArgument, match="label"):
            model.infer({"x": x})
        out = model.infer({"x": x, "label": ["a", "b"]})
        assert np.array_equal(out["x"], x)


def _undeclared_carton(tmp_path, carton_bin):
    # Like the original implementation's own test carton for its Python
    # runner: seven declared inputs the model ignores, and an output declared
    # y uint32 [2,3,512,512] while the model returns out int64 [2].
    d = tmp_path / "undeclared"
    (d / "model").mkdir(parents=True)
    (d / "model" / "main.py").write_text(
        "import numpy as np\n\n\nclass M:\n"
        "    def infer_with_tensors(self, tensors):\n"
        "        return {'out': np.array([1, 2], dtype=np.int64)}\n\n\n"
        "def get_model():\n    return M()\n"
    )
    inputs = "".join(
        f'[[input]]\nname = "{n}"\ndtype = "float32"\nshape = [1]\n' for n in "abcdefg"
    )
    (d / "carton.toml").write_text(
        "spec_version = 1\n" + inputs
        + '[[output]]\nname = "y"\ndtype = "uint32"\nshape = [2, 3, 512, 512]\n'
        + '[runner]\nrunner_name = "python"\nrequired_framework_version = ">=3.11"\n'
        + 'runner_compat_version = 1\n[runner.opts]\nentrypoint_package = "main"\n'
        + 'entrypoint_fn = "get_model"\npython_deps = "system"\n'
    )
    out = tmp_path / "undeclared.carton"
    run_cli(carton_bin, "pack", "-q", str(d), "-o", str(out))
    return out


@pytest.mark.skipif(not runner_available("python"), reason="the Python runner is not built")
def test_lenient_runs_a_carton_whose_declarations_do_not_hold(tmp_path, carton_bin):
    packed = _undeclared_carton(tmp_path, carton_bin)
    import carton.safetensors.numpy as st

    st.save_file({"a": np.ones(1, np.float32)}, str(tmp_path / "a.safetensors"))
    args = ["infer", str(packed), "--input", f"a={tmp_path / 'a.safetensors'}",
            "--output", str(tmp_path / "out.safetensors")]
    refused = run_cli(carton_bin, *args, check=False)
    assert refused.returncode == 1
    assert "missing" in refused.stderr and "--lenient" in refused.stderr
    ran = run_cli(carton_bin, *args, "--lenient", check=False)
    assert ran.returncode == 0, ran.stderr
    assert "warning" in ran.stderr
    assert st.load_file(str(tmp_path / "out.safetensors"))["out"].tolist() == [1, 2]

    with carton.load(packed) as model:
        with pytest.raises(carton.InvalidArgument, match="lenient=True"):
            model.infer({"a": np.ones(1, np.float32)})
    with carton.load(packed, lenient=True) as model:
        with pytest.warns(RuntimeWarning, match='input "b": missing'):
            out = model.infer({"a": np.ones(1, np.float32)})
        assert out["out"].tolist() == [1, 2]


@pytest.mark.skipif(not runner_available("python"), reason="the Python runner is not built")
def test_a_model_that_raises_is_a_model_error_and_stays_usable(tmp_path, carton_bin):
    d = tmp_path / "raises"
    (d / "model").mkdir(parents=True)
    (d / "model" / "main.py").write_text(
        "class M:\n"
        "    def infer_with_tensors(self, tensors):\n"
        "        if float(tensors['x'].sum()) > 0:\n"
        "            raise ValueError('x must be non-positive')\n"
        "        return {'y': tensors['x']}\n\n\n"
        "def get_model():\n    return M()\n"
    )
    (d / "carton.toml").write_text(
        'spec_version = 1\n[runner]\nrunner_name = "python"\n'
        + 'required_framework_version = ">=3.11"\nrunner_compat_version = 1\n'
        + '[runner.opts]\nentrypoint_package = "main"\nentrypoint_fn = "get_model"\n'
        + 'python_deps = "system"\n'
    )
    packed = tmp_path / "raises.carton"
    run_cli(carton_bin, "pack", "-q", str(d), "-o", str(packed))

    with carton.load(packed) as model:
        with pytest.raises(carton.ModelError) as e:
            model.infer({"x": np.ones(2, np.float32)})
        assert isinstance(e.value, RuntimeError)
        assert e.value.code == "model error"
        assert e.value.exception_type == "ValueError"
        assert e.value.exception_message == "x must be non-positive"
        assert "main.py" in str(e.value)  # the model's traceback
        # The model is still loaded: the next call runs.
        out = model.infer({"x": -np.ones(2, np.float32)})
        assert out["y"].tolist() == [-1.0, -1.0]

    import carton.safetensors.numpy as st

    st.save_file({"x": np.ones(2, np.float32)}, str(tmp_path / "x.safetensors"))
    args = ["infer", str(packed), "--input", str(tmp_path / "x.safetensors"),
            "--output", str(tmp_path / "y.safetensors")]
    failed = run_cli(carton_bin, *args, check=False)
    assert failed.returncode == 3, failed.stderr
    assert "ValueError: x must be non-positive" in failed.stderr
    assert not (tmp_path / "y.safetensors").exists()
    doc = run_cli(carton_bin, *args, "--json", check=False)
    assert doc.returncode == 3
    error = json.loads(doc.stdout)["error"]
    assert error["code"] == "model_error"
    assert error["exception"] == {"type": "ValueError", "message": "x must be non-positive"}
