"""carton.load(..., visible_device=...): the device the runner is started on.

The fake runner (tests/runner/fake_runner.cc), installed here as
carton-runner-noop, logs the device it is given and the CUDA_VISIBLE_DEVICES
it is started with; the stand-in CUDA driver (tests/gpu/fake_cuda.cc) lists
two GPUs. The driver is opened once per process, so this file points
CARTON_LIBCUDA at the stand-in before anything loads, and checks the machine
without a driver in a process of its own.
"""

import os
import subprocess
import sys

import pytest

import carton

BUILD = os.environ.get("CARTON_BUILD_DIR", "")
FAKE_CUDA = os.path.join(BUILD, "tests", "libfake_cuda.so")
FAKE_RUNNER = os.path.join(BUILD, "tests", "fake_runner")
GPU0 = "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"
GPU1 = "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f"
FORMS = "(cpu, N, cuda:N, GPU-<uuid> or MIG-<uuid>)"

if not (os.path.exists(FAKE_CUDA) and os.access(FAKE_RUNNER, os.X_OK)):
    pytest.skip("the stand-in driver and the fake runner are not built", allow_module_level=True)
os.environ["CARTON_LIBCUDA"] = FAKE_CUDA


@pytest.fixture
def logged(tmp_path, monkeypatch, noop_carton):
    """Loads noop_carton on a device; returns what the runner logged."""
    runners = tmp_path / "runners"
    runners.mkdir()
    (runners / "carton-runner-noop").symlink_to(FAKE_RUNNER)
    log = tmp_path / "device.log"
    monkeypatch.setenv("CARTON_RUNNER_PATH", str(runners))
    monkeypatch.setenv("FAKE_RUNNER_DEVICE_LOG", str(log))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "inherited")

    def load(**kwargs):
        with carton.load(noop_carton, **kwargs):
            pass
        return log.read_text().splitlines()[-1]

    return load


def seen(device, requested, visible):
    return f"device={device} requested={int(requested)} CUDA_VISIBLE_DEVICES={visible}"


def test_visible_device_takes_an_index_or_a_spec(logged):
    assert logged(visible_device="cpu") == seen("cpu", True, "")
    assert logged(visible_device=1) == seen(GPU1, True, GPU1)
    assert logged(visible_device="1") == seen(GPU1, True, GPU1)
    assert logged(visible_device="cuda:1") == seen(GPU1, True, GPU1)
    assert logged(visible_device=GPU1) == seen(GPU1, True, GPU1)
    mig = "MIG-10111213-1415-1617-1819-1a1b1c1d1e1f"
    assert logged(visible_device=mig) == seen(mig, True, mig)


def test_the_default_is_the_first_gpu(logged):
    assert logged() == seen(GPU0, False, GPU0)
    assert logged(visible_device=None) == seen(GPU0, False, GPU0)


def test_a_bad_visible_device_is_refused_naming_the_forms(logged):
    for bad in ("gpu0", "cuda:", "GPU-12", ""):
        with pytest.raises(carton.InvalidArgument) as e:
            logged(visible_device=bad)
        assert FORMS in str(e.value)
    for bad in (-1, True, 1.0, [0]):
        with pytest.raises(carton.InvalidArgument) as e:
            logged(visible_device=bad)
        assert FORMS in str(e.value)


def test_a_gpu_that_is_not_there_is_not_found(logged):
    with pytest.raises(carton.NotFound) as e:
        logged(visible_device=2)
    assert str(e.value).endswith(f'device "2": no such GPU (2 found: 0 {GPU0}, 1 {GPU1})')


def test_without_a_driver_the_default_is_the_cpu_and_a_gpu_is_refused(logged, noop_carton):
    logged(visible_device="cpu")  # the runner directory and log, set up
    script = f"""
import carton
with carton.load({str(noop_carton)!r}):
    pass
try:
    carton.load({str(noop_carton)!r}, visible_device=0)
except carton.NotFound as e:
    print("refused:", e)
"""
    env = dict(os.environ, CARTON_LIBCUDA="/nonexistent/libcuda.so.1")
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert 'refused: device "0": no GPU (no CUDA driver' in run.stdout
    log = os.environ["FAKE_RUNNER_DEVICE_LOG"]
    with open(log) as f:
        assert f.read().splitlines()[-1] == seen("cpu", False, "")
    assert "note" not in run.stderr


def test_load_unpacked_takes_visible_device(logged, model_dir, tmp_path):
    logged(visible_device="cpu")  # the runner directory and log, set up
    log = os.environ["FAKE_RUNNER_DEVICE_LOG"]
    with carton.load_unpacked(
        model_dir, runner_name="noop", required_framework_version=">=1", visible_device="cuda:1"
    ):
        pass
    with open(log) as f:
        assert f.read().splitlines()[-1] == seen(GPU1, True, GPU1)
    with pytest.raises(carton.InvalidArgument):
        carton.load_unpacked(
            model_dir, runner_name="noop", required_framework_version=">=1", visible_device="gpu"
        )


def test_an_index_may_be_any_integer_type(logged):
    import numpy as np

    assert logged(visible_device=np.int64(1)) == seen(GPU1, True, GPU1)


def test_an_index_past_any_integer_is_refused_as_given(logged):
    with pytest.raises(carton.InvalidArgument) as e:
        logged(visible_device=2**64)
    assert str(2**64) in str(e.value)
    assert FORMS in str(e.value)
    with pytest.raises(carton.InvalidArgument) as e:
        logged(visible_device=-(2**70))
    assert str(-(2**70)) in str(e.value)


def test_an_index_whose_conversion_raises_raises_that(logged):
    class Broken:
        def __index__(self):
            raise ValueError("no index here")

    with pytest.raises(ValueError, match="no index here"):
        logged(visible_device=Broken())


def test_a_numpy_bool_is_not_an_index(logged):
    import numpy as np

    for flag in (np.True_, np.False_):
        with pytest.raises(carton.InvalidArgument) as e:
            logged(visible_device=flag)
        assert FORMS in str(e.value)
