"""Trains a small classifier of handwritten digits and packs it as a carton.

    python3 examples/digits/train.py OUT_DIR

The data are the 1,797 8x8 digits scikit-learn ships (no download). The
model, a two-layer network in torch, is trained on 1,500 of them and
exported to TorchScript; `carton.pack` writes OUT_DIR/digits.carton with
carton.toml's description, and a self-test: eight held-out digits and the
logits the model gives them. The other 297 digits go to
OUT_DIR/heldout.safetensors (`images`, and `labels` to score against), for
`carton infer`.
"""

import sys
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits

import carton
import carton.safetensors.numpy as st

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)

digits = load_digits()
images = (digits.data / 16.0).astype(np.float32)  # 1797 x 64, in [0, 1]
labels = digits.target.astype(np.int64)
order = np.random.default_rng(0).permutation(len(images))
train, test = order[:1500], order[1500:]


class Digits(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Linear(64, 48)
        self.out = torch.nn.Linear(48, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.hidden(images)))


torch.manual_seed(0)
model = Digits()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
x, y = torch.from_numpy(images[train]), torch.from_numpy(labels[train])
for epoch in range(60):
    for batch in torch.randperm(len(x)).split(100):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[batch]), y[batch])
        loss.backward()
        optimizer.step()
model.eval()
print(f"trained on {len(train)} digits, final loss {loss.item():.4f}")

model_dir = out / "digits-model"
model_dir.mkdir(exist_ok=True)
scripted = torch.jit.script(model)
scripted.save(str(model_dir / "model.pt"))

sample = images[test[:8]]
with torch.no_grad():
    logits = scripted(torch.from_numpy(sample)).numpy()
carton.pack(
    model_dir,
    output=out / "digits.carton",
    runner_name="torchscript",
    required_framework_version=">=1.13",
    model_name="digits",
    short_description="Classifies 8x8 handwritten digits (scikit-learn's digits dataset)",
    license="MIT",
    inputs=[carton.TensorSpec("images", "float32", ["batch", 64],
                              description="8x8 pixels in [0, 1]")],
    outputs=[carton.TensorSpec("logits", "float32", ["batch", 10])],
    self_tests=[
        carton.SelfTest(name="eight held-out digits", inputs={"images": sample},
                        expected_out={"logits": logits})
    ],
)
st.save_file({"images": images[test], "labels": labels[test]}, str(out / "heldout.safetensors"))
print(f"packed {out / 'digits.carton'}; "
      f"{len(test)} held-out digits in {out / 'heldout.safetensors'}")
