"""The OLMo-core side of the test switch OLMO_TEST_PARAM_SCALE (src/train/test_faults.h), for
scripts/olmo_core_run.py: a reference run (or a held-out twin, scripts/noise_floor.py) given a
real recipe deviation, so a test can show that `olmo compare` flags OLMo-core itself when it
deviates.
  OLMO_TEST_PARAM_SCALE=GROUP[.LAYER]:X[:FROM]   every step from FROM (default 1), the optimizer's
      update of GROUP's tensors (param_rms groups: scripts/ref_metrics.py PARAM_GROUPS; GROUP.LAYER
      one block tensor) is scaled by X after the step: w = w_before + X (w_after - w_before), in
      float64, rounded to fp32, as olmo.cpp's TestFaults::post_step. X = 1.1 is a 1.1x lr
      multiplier on those tensors (AdamW's decoupled decay is part of the update), X = 0 freezes
      them. Refused unless the config has allow_fault_injection: true (as olmo.cpp).
Cost: a copy of the scaled tensors per step.
"""
import os
import re

import torch
from olmo_core.train.callbacks import Callback

from olmo_core_common import RefError, oc_to_hf_name

ENV = "OLMO_TEST_PARAM_SCALE"


def param_scale(cfg, groups, param_group):
    """The ParamScale callback OLMO_TEST_PARAM_SCALE asks for, else None. groups: the param_rms
    group names; param_group: OLMo-core parameter name -> group (scripts/ref_metrics.py)."""
    spec = os.environ.get(ENV, "")
    if not spec:
        return None
    if not cfg.get("allow_fault_injection"):
        raise RefError(f"{ENV} = '{spec}' is refused: it changes the optimizer's update on purpose "
                       "(a test switch) and needs allow_fault_injection: true in the config")
    m = re.fullmatch(r"([a-z_]+)(\.\d+)?:([^:]+)(?::(\d+))?", spec)
    try:
        x = float(m.group(3)) if m else float("nan")
    except ValueError:
        x = float("nan")
    if not m or m.group(1) not in groups or x != x or abs(x) == float("inf") or \
            (m.group(4) is not None and int(m.group(4)) < 1):
        raise RefError(f"{ENV} = '{spec}': expected GROUP[.LAYER]:X[:FROM] with GROUP one of the "
                       f"param_rms groups ({', '.join(groups)}), X a number and FROM a step >= 1")
    return ParamScale(m.group(1) + (m.group(2) or ""), x, int(m.group(4) or 1), param_group)


class ParamScale(Callback):
    # Before the checkpointer (1) and the recorder (0): they see the scaled weights.
    priority = 2

    def __init__(self, key, x, first, param_group):
        super().__init__()
        self.key, self.x, self.first, self.param_group = key, x, first, param_group
        self.params, self.before = None, []

    def _key(self, name):
        hf = oc_to_hf_name(name)
        g = self.param_group(name)
        return f"{g}.{hf.split('.')[2]}" if "." in self.key and hf.startswith("model.layers.") else g

    @torch.no_grad()
    def pre_step(self, batch):
        if self.params is None:
            model = self.trainer.train_module.model
            self.params = [p for n, p in model.named_parameters() if self._key(n) == self.key]
            if not self.params:
                raise RefError(f"{ENV}: the model has no tensor {self.key}")
        self.before = [p.detach().clone() for p in self.params] \
            if self.trainer.global_step >= self.first else []

    @torch.no_grad()
    def post_step(self):
        for p, b in zip(self.params, self.before):
            w = b.double() + self.x * (p.double() - b.double())
            p.copy_(w.float())
        self.before = []
