"""Shared fixtures of the Python package's tests.

CTest runs them with Debian's interpreter, PYTHONPATH pointing at the build
tree's package, CARTON_RUNNER_PATH at the built runners, CARTON_CACHE_DIR at a
scratch cache and CARTON_BIN at the built CLI (tests/CMakeLists.txt).
"""

import http.server
import importlib.util
import os
import shutil
import socketserver
import subprocess
import threading
import time
import urllib.request

import numpy as np
import pytest

import carton


def runner_available(name: str) -> bool:
    """True when carton-runner-<name> is in a directory of CARTON_RUNNER_PATH."""
    for d in os.environ.get("CARTON_RUNNER_PATH", "").split(":"):
        if d and os.access(os.path.join(d, "carton-runner-" + name), os.X_OK):
            return True
    return False


HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Each test gets a cache of its own, so hits and misses are its own."""
    monkeypatch.setenv("CARTON_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def carton_bin():
    path = os.environ.get("CARTON_BIN") or shutil.which("carton")
    if not path:
        pytest.skip("the carton CLI is not built (CARTON_BIN)")
    return path


def run_cli(carton_bin, *args, check=True):
    result = subprocess.run([carton_bin, *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"carton {' '.join(args)}: {result.returncode}: {result.stderr}")
    return result


@pytest.fixture
def model_dir(tmp_path):
    """A model folder: a small text file and a 256 KiB binary one (stored by
    pack, so it can be found in the carton's bytes)."""
    d = tmp_path / "model"
    d.mkdir()
    (d / "notes.txt").write_text("a model for tests\n")
    rng = np.random.default_rng(7)
    (d / "weights.bin").write_bytes(rng.integers(0, 256, 256 * 1024, dtype=np.uint8).tobytes())
    sub = d / "sub"
    sub.mkdir()
    (sub / "config.json").write_text('{"layers": 2}\n')
    return d


def noop_specs():
    return dict(
        inputs=[
            carton.TensorSpec("x", np.float32, [None, 3], description="features"),
            carton.TensorSpec("label", "string", ["n"]),
        ],
        outputs=[
            carton.TensorSpec("x", "float32", [None, 3]),
            carton.TensorSpec("label", "string", ["n"]),
        ],
    )


@pytest.fixture
def x():
    return np.arange(6, dtype=np.float32).reshape(2, 3)


@pytest.fixture
def noop_carton(tmp_path, model_dir, x):
    """A carton for the noop runner (which returns its inputs), with a
    self-test that expects its inputs back."""
    out = tmp_path / "noop.carton"
    carton.pack(
        model_dir,
        output=out,
        runner_name="noop",
        required_framework_version=">=1",
        model_name="noop-test",
        short_description="returns its inputs",
        license="MIT",
        self_tests=[
            carton.SelfTest(
                name="identity",
                inputs={"x": x, "label": ["a", "b"]},
                expected_out={"x": x, "label": ["a", "b"]},
            )
        ],
        **noop_specs(),
    )
    return out


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def http_server(tmp_path):
    """A static HTTP server on 127.0.0.1 serving tmp_path/www; yields
    (directory, base url)."""
    root = tmp_path / "www"
    root.mkdir()

    def handler(*args, **kwargs):
        return _QuietHandler(*args, directory=str(root), **kwargs)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def oci_registry(tmp_path):
    """Debian's docker-registry on 127.0.0.1 with its storage in tmp_path;
    yields "HOST:PORT"."""
    exe = "/usr/bin/docker-registry"
    if not os.access(exe, os.X_OK):
        pytest.skip("docker-registry is not installed (bash scripts/install-deps.sh --test)")
    root = tmp_path / "registry"
    (root / "storage").mkdir(parents=True)
    for _ in range(5):
        with socketserver.TCPServer(("127.0.0.1", 0), None) as probe:
            port = probe.server_address[1]
        config = root / "config.yml"
        config.write_text(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n"
            f"    rootdirectory: {root / 'storage'}\nhttp:\n  addr: 127.0.0.1:{port}\n"
        )
        log = open(root / "registry.log", "wb")
        proc = subprocess.Popen([exe, "serve", str(config)], stdout=log, stderr=log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        if proc.poll() is None:
            try:
                yield f"127.0.0.1:{port}"
            finally:
                proc.terminate()
                proc.wait()
                log.close()
            return
        log.close()
    pytest.fail("docker-registry did not start: " + (root / "registry.log").read_text())
