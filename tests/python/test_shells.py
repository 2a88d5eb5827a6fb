"""The three shells over runner::Model say the same thing for the same input.

The CLI (`carton infer`), the Python package (carton.load) and the C API
(carton_load / carton_infer, through the carton_words program built beside
the tests) each only translate to and from one library type, so one bad
input gets one wording in all three: a misfit of the declared inputs, a
model that raises while it loads and while it infers, a location that does
not parse; and lenient mode and the runner override work from each.
"""

import os
import subprocess

import numpy as np
import pytest

import carton
import carton.safetensors.numpy as st
from conftest import run_cli, runner_available


@pytest.fixture
def words():
    path = os.environ.get("CARTON_WORDS")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("carton_words is not built (CARTON_WORDS)")
    return path


def c_call(words, *args):
    """(ok, status name, message) of one C API call."""
    r = subprocess.run([words, *args], capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stderr
    line = r.stdout.rstrip("\n")
    if line == "ok":
        return True, "", ""
    status, _, message = line.partition(": ")
    return False, status, message


def cli_error(result, command):
    """The CLI's error message: what follows "carton <command>: " to the end
    of stderr (a message may have several lines)."""
    prefix = f"carton {command}: "
    at = result.stderr.rfind(prefix)
    assert at >= 0, result.stderr
    return result.stderr[at + len(prefix):].rstrip("\n")


def pack_declared(tmp_path, carton_bin):
    """A noop carton that declares inputs x (float32 [2]) and y (int64 [2])."""
    d = tmp_path / "declared"
    (d / "model").mkdir(parents=True)
    (d / "model" / "notes.txt").write_text("noop\n")
    (d / "carton.toml").write_text(
        'spec_version = 1\n[runner]\nrunner_name = "noop"\n'
        'required_framework_version = ">=1"\nrunner_compat_version = 1\n'
        '[[input]]\nname = "x"\ndtype = "float32"\nshape = [2]\n'
        '[[input]]\nname = "y"\ndtype = "int64"\nshape = [2]\n'
    )
    out = tmp_path / "declared.carton"
    run_cli(carton_bin, "pack", "-q", str(d), "-o", str(out))
    return str(out)


def test_an_input_misfit_has_one_wording(tmp_path, carton_bin, words):
    model = pack_declared(tmp_path, carton_bin)
    inputs = tmp_path / "in.safetensors"
    st.save_file({"x": np.ones(3, np.float32)}, str(inputs))

    cli = run_cli(carton_bin, "infer", model, "--input", str(inputs), "-o",
                  str(tmp_path / "out.safetensors"), check=False)
    assert cli.returncode == 1
    cli_message = cli_error(cli, "infer")

    with carton.load(model) as m:
        with pytest.raises(carton.InvalidArgument) as e:
            m.infer({"x": np.ones(3, np.float32)})
    python_message = str(e.value)

    ok, status, c_message = c_call(words, "infer", model, str(inputs))
    assert not ok and status == "invalid argument"

    assert model + ': input "x": shape [3]' in cli_message
    assert "(declared inputs: x float32, y int64)" in cli_message
    assert "lenient mode (--lenient, lenient=True) runs it anyway" in cli_message
    assert python_message == cli_message
    assert c_message.endswith(cli_message), c_message


def test_lenient_runs_it_from_every_shell_and_warns_once(tmp_path, carton_bin, words):
    model = pack_declared(tmp_path, carton_bin)
    inputs = tmp_path / "in.safetensors"
    st.save_file({"x": np.ones(2, np.float32)}, str(inputs))  # y is missing
    out = tmp_path / "out.safetensors"

    cli = run_cli(carton_bin, "infer", model, "--input", str(inputs), "-o", str(out),
                  "--lenient", check=False)
    assert cli.returncode == 0, cli.stderr
    warnings = [line for line in cli.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, cli.stderr
    assert 'input "y": missing' in warnings[0]

    with carton.load(model, lenient=True) as m:
        with pytest.warns(RuntimeWarning, match='input "y": missing'):
            assert m.infer({"x": np.ones(2, np.float32)})["x"].tolist() == [1.0, 1.0]

    assert c_call(words, "infer", model, str(inputs), "--lenient") == (True, "", "")
    assert not c_call(words, "infer", model, str(inputs))[0]


def test_the_runner_override_works_from_every_shell(tmp_path, carton_bin, words):
    model = pack_declared(tmp_path, carton_bin)
    inputs = tmp_path / "in.safetensors"
    st.save_file({"x": np.ones(2, np.float32), "y": np.ones(2, np.int64)}, str(inputs))
    out = str(tmp_path / "out.safetensors")

    cli = run_cli(carton_bin, "infer", model, "--input", str(inputs), "-o", out,
                  "--runner", "nosuch", check=False)
    assert cli.returncode == 2
    cli_message = cli_error(cli, "infer")
    assert 'no runner for "nosuch"' in cli_message

    with pytest.raises(carton.NotFound) as e:
        carton.load(model, runner_name="nosuch")
    assert str(e.value) == cli_message

    ok, status, c_message = c_call(words, "infer", model, str(inputs), "--runner", "nosuch")
    assert not ok and status == "not found"
    assert c_message.endswith(cli_message)

    # The override naming the runner carton.toml names: it runs.
    assert run_cli(carton_bin, "infer", model, "--input", str(inputs), "-o", out,
                   "--runner", "noop").returncode == 0
    with carton.load(model, runner_name="noop") as m:
        out = m.infer({"x": np.ones(2, np.float32), "y": np.ones(2, np.int64)})
        assert out["y"].tolist() == [1, 1]
    assert c_call(words, "infer", model, str(inputs), "--runner", "noop")[0]


def test_a_bad_location_has_one_wording(tmp_path, carton_bin, words):
    bad = "ftp://example.com/m.carton"
    inputs = tmp_path / "in.safetensors"
    st.save_file({"x": np.ones(2, np.float32)}, str(inputs))
    cli = run_cli(carton_bin, "infer", bad, "--input", str(inputs), "-o",
                  str(tmp_path / "o.safetensors"), check=False)
    assert cli.returncode == 2
    cli_message = cli_error(cli, "infer")
    assert '"ftp" is not a scheme carton reads' in cli_message
    with pytest.raises(carton.InvalidArgument) as e:
        carton.load(bad)
    assert str(e.value) == cli_message
    ok, status, c_message = c_call(words, "load", bad)
    assert not ok and status == "invalid argument"
    assert c_message.endswith(cli_message)


def python_model(tmp_path, carton_bin, main_py):
    d = tmp_path / "py"
    (d / "model").mkdir(parents=True)
    (d / "model" / "main.py").write_text(main_py)
    (d / "carton.toml").write_text(
        'spec_version = 1\n[runner]\nrunner_name = "python"\n'
        'required_framework_version = ">=3.11"\nrunner_compat_version = 1\n'
        '[runner.opts]\nentrypoint_package = "main"\nentrypoint_fn = "get_model"\n'
        'python_deps = "system"\n'
    )
    out = tmp_path / "py.carton"
    run_cli(carton_bin, "pack", "-q", str(d), "-o", str(out))
    return str(out)


@pytest.mark.skipif(not runner_available("python"), reason="the Python runner is not built")
def test_a_model_raising_while_it_loads_is_a_model_error_in_every_shell(tmp_path, carton_bin,
                                                                        words):
    model = python_model(
        tmp_path, carton_bin,
        "def get_model():\n    raise ValueError('no weights here')\n")
    inputs = tmp_path / "in.safetensors"
    st.save_file({"x": np.ones(2, np.float32)}, str(inputs))

    cli = run_cli(carton_bin, "infer", model, "--input", str(inputs), "-o",
                  str(tmp_path / "o.safetensors"), check=False)
    assert cli.returncode == 3, cli.stderr
    assert cli.stderr.count("raise ValueError('no weights here')") == 1, cli.stderr
    cli_message = cli_error(cli, "infer")
    assert "main.get_model raised: ValueError: no weights here" in cli_message

    with pytest.raises(carton.ModelError) as e:
        carton.load(model)
    assert e.value.exception_type == "ValueError"
    assert e.value.exception_message == "no weights here"
    assert "main.get_model raised: ValueError: no weights here" in str(e.value)

    ok, status, c_message = c_call(words, "load", model)
    assert not ok and status == "model error"
    assert "main.get_model raised: ValueError: no weights here" in c_message


@pytest.mark.skipif(not runner_available("python"), reason="the Python runner is not built")
def test_a_model_raising_while_it_infers_is_a_model_error_in_every_shell(tmp_path, carton_bin,
                                                                         words):
    model = python_model(
        tmp_path, carton_bin,
        "class M:\n"
        "    def infer_with_tensors(self, tensors):\n"
        "        raise KeyError('no such feature')\n\n\n"
        "def get_model():\n    return M()\n")
    inputs = tmp_path / "in.safetensors"
    st.save_file({"x": np.ones(2, np.float32)}, str(inputs))

    cli = run_cli(carton_bin, "infer", model, "--input", str(inputs), "-o",
                  str(tmp_path / "o.safetensors"), check=False)
    assert cli.returncode == 3, cli.stderr
    cli_message = cli_error(cli, "infer")
    assert "infer_with_tensors raised: KeyError" in cli_message

    with carton.load(model) as m:
        with pytest.raises(carton.ModelError) as e:
            m.infer({"x": np.ones(2, np.float32)})
    assert e.value.exception_type == "KeyError"
    assert "infer_with_tensors raised: KeyError" in str(e.value)

    ok, status, c_message = c_call(words, "infer", model, str(inputs))
    assert not ok and status == "model error"
    assert "infer_with_tensors raised: KeyError" in c_message
