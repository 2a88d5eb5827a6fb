"""`cmake --install` puts the package into site-packages under the prefix,
where the interpreter imports it with nothing else set, and the installed
package finds the runners installed beside it (libexec/carton/runners)."""

import os
import subprocess
import sys
import textwrap

import pytest

BUILD_DIR = os.environ.get("CARTON_BUILD_DIR")
INSTALL_DIR = os.environ.get("CARTON_PYTHON_INSTALL_DIR")


@pytest.mark.skipif(not BUILD_DIR or not INSTALL_DIR, reason="needs CARTON_BUILD_DIR (CTest)")
def test_the_installed_package_imports_and_runs_a_model(tmp_path):
    prefix = tmp_path / "prefix"
    install = subprocess.run(
        ["cmake", "--install", BUILD_DIR, "--prefix", str(prefix)], capture_output=True, text=True
    )
    assert install.returncode == 0, install.stderr
    site = prefix / INSTALL_DIR
    package = site / "carton"
    for name in ["__init__.py", "__init__.pyi", "py.typed", "_paths.py", "safetensors/torch.pyi"]:
        assert (package / name).is_file(), name
    assert list(package.glob("_carton*.so"))

    script = textwrap.dedent(
        """
        import os, tempfile
        import numpy as np
        import carton
        import carton.safetensors.numpy as stnp
        print(carton.__file__)
        d = tempfile.mkdtemp()
        open(os.path.join(d, "w.bin"), "wb").write(b"0123")
        path = carton.pack(d, output=os.path.join(d, "m.carton"), runner_name="noop",
                           required_framework_version=">=1")
        with carton.load(path) as model:
            print(model.runner_path)
            out = model.infer({"x": np.arange(3, dtype=np.float32)})
            assert out["x"].tolist() == [0.0, 1.0, 2.0], out
        assert stnp.load(stnp.save({"a": np.arange(2)}))["a"].tolist() == [0, 1]
        """
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(site),
        "PYTHONDONTWRITEBYTECODE": "1",
        "CARTON_CACHE_DIR": str(tmp_path / "cache"),
        "TMPDIR": str(tmp_path),
    }
    # A sanitizer build's module needs its runtime preloaded (tests/CMakeLists.txt).
    env.update({k: os.environ[k] for k in ("LD_PRELOAD", "ASAN_OPTIONS") if k in os.environ})
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == str(package / "__init__.py")
    assert lines[1] == str(prefix / "libexec" / "carton" / "runners" / "carton-runner-noop")


@pytest.mark.skipif(not BUILD_DIR or not INSTALL_DIR, reason="needs CARTON_BUILD_DIR (CTest)")
def test_the_install_is_stripped_and_its_python_runner_imports_the_package(tmp_path):
    prefix = tmp_path / "prefix"
    install = subprocess.run(
        ["cmake", "--install", BUILD_DIR, "--prefix", str(prefix)], capture_output=True, text=True
    )
    assert install.returncode == 0, install.stderr
    # Stripped by default: no debug sections in the programs or the
    # static libraries (the build tree keeps them).
    for path in [prefix / "bin" / "carton", *sorted((prefix / "lib").glob("libcarton*.a"))]:
        sections = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True,
                                  text=True, check=True).stdout
        assert ".debug_info" not in sections, path
    built = subprocess.run(["readelf", "-S", "-W", os.path.join(BUILD_DIR, "tools", "carton")],
                           capture_output=True, text=True, check=True).stdout
    size = sum(p.stat().st_size for p in prefix.rglob("*") if p.is_file())
    print(f"installed: {size / 2**20:.1f} MiB; build tree has debug info: {'.debug_info' in built}")
    if not os.environ.get("CARTON_SANITIZED"):
        # A sanitized build's code is several times larger, debug info or not.
        assert size < 100 * 2**20

    runner = prefix / "libexec" / "carton" / "runners" / "carton-runner-python"
    if not runner.exists():
        pytest.skip("the Python runner is not built")
    # Model code imports the package installed beside the runner, with
    # nothing on PYTHONPATH.
    model = tmp_path / "m"
    (model / "model").mkdir(parents=True)
    (model / "model" / "main.py").write_text(
        "import os\nimport carton\n\n\n"
        "class M:\n    def infer_with_tensors(self, tensors):\n        return tensors\n\n\n"
        "def get_model():\n"
        "    assert carton.__file__.startswith(os.environ['EXPECTED_PREFIX']), carton.__file__\n"
        "    return M()\n"
    )
    (model / "carton.toml").write_text(
        'spec_version = 1\n[runner]\nrunner_name = "python"\n'
        'required_framework_version = ">=3.8"\nrunner_compat_version = 1\n'
        '[runner.opts]\nentrypoint_package = "main"\nentrypoint_fn = "get_model"\n'
        'python_deps = "system"\n'
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "CARTON_CACHE_DIR": str(tmp_path / "cache"),
        "TMPDIR": str(tmp_path),
        "EXPECTED_PREFIX": str(prefix),
    }
    env.update({k: os.environ[k] for k in ("LD_PRELOAD", "ASAN_OPTIONS") if k in os.environ})
    run = subprocess.run([str(prefix / "bin" / "carton"), "self-test", str(model)],
                         capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert "Error" not in run.stderr, run.stderr
