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
