"""The GIL is released around every I/O- or CPU-bound call into the library:
while one thread packs, verifies, loads, infers or writes safetensors, another
Python thread keeps running.

Each operation runs on a second thread while this one records timestamps in
a tight Python loop. Had the call kept the GIL, this thread would stop for
the whole call: its longest pause inside the call would be about the call's
duration. Released, the pauses are scheduling noise."""

import os
import threading
import time

import numpy as np
import pytest

import carton
from carton.safetensors import safe_open
from carton.safetensors.numpy import save_file
from conftest import HAS_TORCH, runner_available


def longest_pause_during(op):
    """Runs op() on another thread; returns (its duration, the longest pause
    of this thread while it ran)."""
    span = {}
    errors = []

    def work():
        span["start"] = time.perf_counter()
        try:
            op()
        except BaseException as e:  # reported by the caller
            errors.append(e)
        span["end"] = time.perf_counter()

    t = threading.Thread(target=work)
    stamps = []
    t.start()
    while t.is_alive():
        stamps.append(time.perf_counter())
    t.join()
    if errors:
        raise errors[0]
    inside = [s for s in stamps if span["start"] <= s <= span["end"]]
    points = [span["start"]] + inside + [span["end"]]
    pause = max(b - a for a, b in zip(points, points[1:]))
    return span["end"] - span["start"], pause


def assert_runs_concurrently(op, min_seconds=0.02):
    duration, pause = longest_pause_during(op)
    assert duration >= min_seconds, f"the operation took only {duration:.3f} s"
    assert pause < duration / 2, f"this thread stopped for {pause:.3f} s of {duration:.3f} s"


@pytest.fixture
def big_model(tmp_path):
    d = tmp_path / "big"
    d.mkdir()
    rng = np.random.default_rng(11)
    (d / "weights.bin").write_bytes(rng.integers(0, 256, 64 << 20, dtype=np.uint8).tobytes())
    return d


def test_pack_verify_and_load_release_the_gil(big_model, tmp_path):
    out = tmp_path / "big.carton"
    # deflate is slow (tens of MB/s): a long CPU-bound call.
    small = tmp_path / "small"
    small.mkdir()
    (small / "w.bin").write_bytes((big_model / "weights.bin").read_bytes()[: 8 << 20])
    assert_runs_concurrently(
        lambda: carton.pack(small, output=tmp_path / "deflate.carton", runner_name="noop",
                            required_framework_version=">=1", compression="deflate"),
        min_seconds=0.1,
    )
    carton.pack(big_model, output=out, runner_name="noop", required_framework_version=">=1",
                compression="stored")
    assert_runs_concurrently(lambda: carton.verify(out))
    assert_runs_concurrently(lambda: carton.load(out).close())  # a miss: hashes 64 MiB


@pytest.mark.skipif(not runner_available("python"), reason="the Python runner is not built")
def test_infer_releases_the_gil_while_the_runner_works(tmp_path):
    d = tmp_path / "sleepy"
    d.mkdir()
    (d / "main.py").write_text(
        "import time\n\n\n"
        "class Sleepy:\n"
        "    def infer_with_tensors(self, tensors):\n"
        "        time.sleep(0.4)\n"
        "        return {'y': tensors['x']}\n\n\n"
        "def get_model():\n"
        "    return Sleepy()\n"
    )
    path = carton.pack(
        d,
        output=tmp_path / "sleepy.carton",
        runner_name="python",
        required_framework_version=">=3",
        runner_opts={"entrypoint_package": "main", "entrypoint_fn": "get_model",
                     "python_deps": "system"},
    )
    with carton.load(path) as model:
        x = np.arange(4, dtype=np.float32)
        assert_runs_concurrently(lambda: model.infer({"x": x}), min_seconds=0.3)
        np.testing.assert_array_equal(model.infer({"x": x})["y"], x)


def test_two_threads_share_one_model(noop_carton):
    with carton.load(noop_carton) as model:
        results = {}

        def work(i):
            x = np.full((2, 3), i, np.float32)
            for _ in range(20):
                out = model.infer({"x": x, "label": [str(i)]})
                assert np.all(out["x"] == i) and out["label"][0] == str(i)
            results[i] = True

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == {0: True, 1: True}


def test_safetensors_writes_and_reads_release_the_gil(tmp_path):
    a = np.random.default_rng(4).standard_normal(32 << 20).astype(np.float32)  # 128 MiB
    path = tmp_path / "big.safetensors"
    assert_runs_concurrently(lambda: save_file({"a": a}, path))
    if HAS_TORCH:
        with safe_open(path, framework="pt") as f:
            assert_runs_concurrently(lambda: f.get_tensor("a"))
    with safe_open(path, framework="np") as f:
        assert_runs_concurrently(lambda: f.get_slice("a")[::2])
    os.unlink(path)
