"""Diagnostic, not a reference: scripts/olmo_core_run.py with OLMo-core's clipping norm computed in
float64 (then rounded to fp32, as olmo.cpp's optim/grad_clip.cpp does) instead of torch's fp32
`get_total_norm`; everything else is OLMo-core unchanged. It isolates how much of an olmo.cpp vs
OLMo-core difference comes from the clip coefficient (bench/results/olmo_core_reference.md,
"The step-4 loss ratio").
usage: olmo_core_run_f64clip.py <olmo_core_run.py arguments> (no --noise-floor: run the twin
       with --nudge-ulp --init-hf REF/init_hf --run-dir REF/noise_twin, then noise_floor.py REF)
Cost: one extra float64 pass over the gradient per step.
"""
import math
import os
import runpy
import sys

import torch


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    if norm_type != 2.0:
        raise ValueError(f"olmo_core_run_f64clip: only the 2-norm, not {norm_type}")
    s = 0.0
    for t in tensors:
        s += float(t.detach().double().pow(2).sum())
    return torch.tensor(math.sqrt(s), dtype=torch.float32)


if __name__ == "__main__":
    if "--noise-floor" in sys.argv:
        sys.exit("olmo_core_run_f64clip.py: run the twin yourself (see the header), "
                 "not --noise-floor")
    # OLMo-core's TransformerTrainModule._clip_grad_norm calls nn.utils.get_total_norm at each step.
    torch.nn.utils.get_total_norm = get_total_norm
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    sys.argv = [os.path.join(here, "olmo_core_run.py")] + sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
