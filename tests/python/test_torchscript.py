"""The original implementation's headline flow: script a model with
torch.jit.script, carton.pack it, carton.load it, infer with numpy, run its
self-tests; through the TorchScript runner built in this tree."""

import numpy as np
import pytest

import carton
from conftest import runner_available

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(
    not runner_available("torchscript"), reason="the TorchScript runner is not built"
)


class Affine(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale + 1


@pytest.fixture
def scripted(tmp_path):
    d = tmp_path / "ts_model"
    d.mkdir()
    torch.jit.script(Affine()).save(str(d / "model.pt"))
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    return carton.pack(
        d,
        output=tmp_path / "affine.carton",
        runner_name="torchscript",
        required_framework_version=">=1.13",
        model_name="affine",
        inputs=[carton.TensorSpec("x", "float32", ["batch", 4])],
        outputs=[carton.TensorSpec("y", "float32", ["batch", 4])],
        self_tests=[carton.SelfTest(name="affine", inputs={"x": x}, expected_out={"y": x * 2 + 1})],
    )


def test_script_pack_load_infer_self_test(scripted):
    assert carton.verify(scripted).ok
    with carton.load(scripted) as model:
        x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
        out = model.infer({"x": x})
        np.testing.assert_allclose(out["y"], x * 2 + 1, rtol=1e-6)
        assert model.self_test().passed
        assert model.runner_path.endswith("carton-runner-torchscript")


def test_the_runner_refuses_a_wrong_dtype_and_shape(scripted):
    with carton.load(scripted) as model:
        with pytest.raises(carton.InvalidArgument) as e:
            model.infer({"x": np.ones((2, 4), np.float64)})
        assert 'input "x"' in str(e.value) and "declared" in str(e.value)
        with pytest.raises(carton.InvalidArgument) as e:
            model.infer({"x": np.ones((2, 5), np.float32)})
        assert "dimension 1" in str(e.value)
        # The runner is still serving.
        np.testing.assert_allclose(model.infer({"x": np.ones((1, 4), np.float32)})["y"], 3)


def test_a_failing_self_test_is_a_report(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    torch.jit.script(Affine()).save(str(d / "model.pt"))
    x = np.ones((1, 4), np.float32)
    path = carton.pack(
        d,
        output=tmp_path / "wrong.carton",
        runner_name="torchscript",
        required_framework_version=">=1.13",
        inputs=[carton.TensorSpec("x", "float32", None)],
        outputs=[carton.TensorSpec("y", "float32", None)],
        self_tests=[carton.SelfTest(name="off", inputs={"x": x}, expected_out={"y": x * 5})],
    )
    with carton.load(path) as model:
        report = model.self_test()
        assert not report.passed
        (check,) = report.tests[0].outputs
        assert check.name == "y" and not check.passed and check.message


def test_a_single_pt_file_packs_into_a_carton_that_runs(tmp_path):
    # As the original implementation: a single .pt is the model, model/model.pt.
    pt = tmp_path / "mlp.pt"
    torch.jit.script(Affine()).save(str(pt))
    packed = carton.pack(
        pt,
        output=tmp_path / "single.carton",
        runner_name="torchscript",
        required_framework_version=">=1.13",
        inputs=[carton.TensorSpec("x", "float32", ["batch", 4])],
        outputs=[carton.TensorSpec("y", "float32", ["batch", 4])],
    )
    assert [f["path"] for f in carton.get_model_info(packed).files if f["path"].startswith("model/")] == [
        "model/model.pt"
    ]
    with carton.load(packed) as model:
        x = np.ones((2, 4), np.float32)
        np.testing.assert_allclose(model.infer({"x": x})["y"], x * 2 + 1)


def test_a_self_test_of_an_undeclared_output_says_what_came_back(tmp_path):
    # The README's example without outputs=: the single output is named
    # "output", and the failure says so.
    d = tmp_path / "m"
    d.mkdir()
    torch.jit.script(Affine()).save(str(d / "model.pt"))
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    packed = carton.pack(
        d,
        output=tmp_path / "m.carton",
        runner_name="torchscript",
        required_framework_version=">=1.13",
        inputs=[carton.TensorSpec("x", "float32", ["batch", 4])],
        self_tests=[carton.SelfTest(name="t", inputs={"x": x}, expected_out={"y": x * 2 + 1})],
    )
    with carton.load(packed) as model:
        report = model.self_test()
    assert not report.passed
    message = report.tests[0].outputs[0].message
    assert "missing from the runner's outputs" in message
    assert 'it returned "output" float32 [2, 4]' in message
