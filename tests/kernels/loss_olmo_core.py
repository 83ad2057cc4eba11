"""Oracle for tests/kernels/loss_test.cpp (LmHeadLoss.MatchesOlmoCore): OLMo-core's own
cross_entropy_loss (olmo_core.nn.functional) with compute_z_loss=True, reduction="sum",
z_loss_multiplier=1e-5, on logits = x @ W.T, plus autograd gradients of (ce + z) / count.

Usage: loss_olmo_core.py OUT_DIR   -> writes x.f32 [N,D], W.f32 [V,D], targets.i32 [N],
sums.f64 [ce, z, count], dx.f64 [N,D], dW.f64 [V,D] (raw little-endian), shape.txt "N D V".
"""
import os
import sys

import numpy as np
import torch

from olmo_core.nn.functional.cross_entropy_loss import cross_entropy_loss

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
N, D, V = 45, 32, 1003
rng = np.random.default_rng(20261202)
x = rng.standard_normal((N, D)).astype(np.float32)
W = (0.3 * rng.standard_normal((V, D))).astype(np.float32)
t = rng.integers(0, V, size=N).astype(np.int32)
t[[3, 17, 30]] = -100

xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
Wt = torch.tensor(W, dtype=torch.float64, requires_grad=True)
logits = xt @ Wt.T  # cross_entropy_loss casts to fp32 itself, as in training
labels = torch.tensor(t, dtype=torch.long)
ce, z = cross_entropy_loss(logits, labels, ignore_index=-100, reduction="sum",
                           compute_z_loss=True, z_loss_multiplier=1e-5)
count = int((labels != -100).sum())
((ce + z) / count).backward()

x.tofile(os.path.join(out, "x.f32"))
W.tofile(os.path.join(out, "W.f32"))
t.tofile(os.path.join(out, "targets.i32"))
np.array([ce.item(), z.item(), count], dtype=np.float64).tofile(os.path.join(out, "sums.f64"))
xt.grad.numpy().astype(np.float64).tofile(os.path.join(out, "dx.f64"))
Wt.grad.numpy().astype(np.float64).tofile(os.path.join(out, "dW.f64"))
with open(os.path.join(out, "shape.txt"), "w") as f:
    f.write(f"{N} {D} {V}\n")
