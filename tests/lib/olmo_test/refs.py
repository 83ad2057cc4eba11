"""olmo_test.refs: the independent references the parity tests compare build/olmo against.

- OLMo-core's own Trainer on a recipe (scripts/olmo_core_run.py, with its noise-floor twins and
  optionally the held-out twin) and its checkpoint converter (scripts/olmo_core_ckpt.py):
  reference(), start_held_out_twin(), script(RUNNER / CKPT, ...);
  `olmo compare` of a run against it: compare(), first_violation()
- transformers' Olmo3ForCausalLM: load_hf(dir) (an export or init dir, fp32, eager attention),
  tiny_hf_model() (tests/configs/tiny.yaml's shape, random init: the init_from_hf weights of the
  training-parity tests)
OLMo-core's data order: olmo_test.olmo_core_order. torch / transformers are imported on use
(seconds), so importing this module is cheap.
"""
import os
import re
import subprocess

from olmo_test import PY, SRC, olmo, script

RUNNER = os.path.join(SRC, "scripts", "olmo_core_run.py")
CKPT = os.path.join(SRC, "scripts", "olmo_core_ckpt.py")


def reference(config, overrides, run_dir, noise_floor=True, held_out=False):
    """OLMo-core's Trainer on config + overrides into run_dir (CompletedProcess; rc 0 = ran);
    held_out: also run_dir/held_twin, left out of the floor (scripts/noise_floor.py HELD_OUT)."""
    # One thread: bitwise the same as two at this size, and 4x faster on a busy 2-core machine.
    return script(RUNNER, config, *overrides, "--run-dir", run_dir, "--threads", "1",
                  *(["--noise-floor"] if noise_floor else []),
                  *(["--held-out-twin"] if held_out else []))


def start_held_out_twin(config, overrides, ref, run_dir, env=None):
    """Starts (Popen; output in run_dir.log) an OLMo-core run made as ref's held_twin is (its
    perturbation --nudge-ulp-mixed, scripts/noise_floor.py HELD_OUT, from ref/init_hf) into
    run_dir, with env's variables added (a deviation: OLMO_TEST_PARAM_SCALE, ...)."""
    with open(run_dir + ".log", "w") as log:
        return subprocess.Popen([PY, RUNNER, config, *overrides, "--run-dir", run_dir, "--threads",
                                 "1", "--nudge-ulp-mixed", "--init-hf", os.path.join(ref, "init_hf")],
                                stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {})})


def compare(run, ref, *flags):
    """`olmo compare RUN REF`: (exit status, its output)."""
    p = olmo("compare", run, ref, "--no-plot", *flags, check=False)
    return p.returncode, p.stdout + p.stderr


def first_violation(out):
    """(step, quantity) of the first OUT OF TOLERANCE line of `olmo compare`, else (None, None)."""
    m = re.search(r"OUT OF TOLERANCE step (\d+) (\S+):", out)
    return (int(m.group(1)), m.group(2)) if m else (None, None)


def load_hf(d):
    """The HF model directory d (an `olmo export` or a save_pretrained) as transformers loads it:
    AutoModelForCausalLM, fp32, eager attention, eval mode, local files only."""
    import torch
    from transformers import AutoModelForCausalLM
    m = AutoModelForCausalLM.from_pretrained(d, local_files_only=True, dtype=torch.float32,
                                             attn_implementation="eager")
    return m.eval()


def tiny_hf_model(max_positions):
    """A random-init fp32 Olmo3ForCausalLM of tests/configs/tiny.yaml's shape (vocab 512, d 64, 4
    layers: 3 sliding-window (16) + 1 full, 4 heads / 2 KV heads, untied); seed it first
    (torch.manual_seed)."""
    from transformers import Olmo3Config, Olmo3ForCausalLM
    cfg = Olmo3Config(vocab_size=512, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                      sliding_window=16, max_position_embeddings=max_positions, rms_norm_eps=1e-6,
                      rope_theta=500000.0, pad_token_id=None, eos_token_id=None,
                      bos_token_id=None, tie_word_embeddings=False,
                      attn_implementation="eager")
    cfg.layer_types = ["sliding_attention"] * 3 + ["full_attention"]
    return Olmo3ForCausalLM(cfg).float()
