"""Scores `carton infer`'s logits against the held-out labels and shows a
few predictions.

    python3 examples/digits/score.py HELDOUT.safetensors LOGITS.safetensors
"""

import sys

import numpy as np

import carton.safetensors.numpy as st

heldout = st.load_file(sys.argv[1])
logits = st.load_file(sys.argv[2])["logits"]
predicted = logits.argmax(axis=1)
labels = heldout["labels"]
print(f"accuracy on {len(labels)} held-out digits: {np.mean(predicted == labels):.1%}")
shades = " .:-=+*#%@"
for i in range(4):
    image = heldout["images"][i].reshape(8, 8)
    rows = ["".join(shades[int(p * (len(shades) - 1))] * 2 for p in row) for row in image]
    print(f"\ndigit {i}: predicted {predicted[i]}, labelled {labels[i]}")
    print("\n".join("    " + r for r in rows))
