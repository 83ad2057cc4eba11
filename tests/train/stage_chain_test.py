"""The three-stage chain at tiny scale, as the official OLMo 3 scripts run it:
stage 1 (pre-training, 6 steps) -> stage 2 (mid-training: load_path = stage 1, AdamW state
carried, trainer state reset, linear decay to 0) -> stage 3 (long context: packed instances,
intra-document masking, YaRN on the full-attention layers, 4x the sequence length, on 2
processes with OLMo-core's per-rank loss normalisation).

Checked: each phase starts from the previous phase's final checkpoint (start record), its first
step is step 1 (trainer state reset) while the AdamW step counts continue (6 -> 10 -> 14), the
weights entering stage 2 are stage 1's final weights (a stage-2 run with lr 1e-12 ends one step
later within 1e-6 of them; a fresh init would be ~1 away), stage 3's checkpoint
records packed_fsl / YaRN and its loader state restarted, and losses stay finite.
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td


def state(step_dir):
    return json.load(open(os.path.join(step_dir, "state.json")))


def weights(step_dir):
    """HF-named weight tensors (rank 0 writes them whole) of a checkpoint."""
    idx = json.load(open(os.path.join(step_dir, "index.json")))
    out = {}
    for t in idx["tensors"]:
        if t["name"].startswith("optim."):
            continue
        with open(os.path.join(step_dir, t["file"]), "rb") as f:
            f.seek(t["byte_offset"])
            out[t["name"]] = np.frombuffer(f.read(t["nbytes"]), dtype="<f4").astype(np.float64)
    return out


def start(run):
    return [r for r in ot.read_metrics(run, "info") if r.get("event") == "start"][-1]


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_chain_")
    data = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 8 * 40)
    s1, s2, s3 = (os.path.join(tmp, f"stage{i}") for i in (1, 2, 3))
    base = [f"data.mix={data['mix']}", "trainer.threads=1"]
    ot.olmo("train", td.tiny_config(), *base, f"trainer.run_dir={s1}", "trainer.max_steps=6")
    ot.olmo("train", td.tiny_config(), *base, f"trainer.run_dir={s2}", "trainer.max_steps=4",
            f"trainer.load_path={s1}", "trainer.load_trainer_state=false",
            "trainer.load_optim_state=true", "scheduler.name=linear_with_warmup",
            "scheduler.warmup_steps=0", "scheduler.alpha_f=0.0", "optim.lr=1e-3", "data.seed=1337")
    exe = ot.bin_path()
    mpirun = os.environ.get("OLMO_MPIRUN", "mpirun")
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    p = subprocess.run([mpirun, "--oversubscribe", "--allow-run-as-root", "-np", "2", exe, "train",
                        td.tiny_config(), *base, f"trainer.run_dir={s3}", "trainer.max_steps=4",
                        f"trainer.load_path={s2}", "trainer.load_trainer_state=false",
                        "data.dataset=packed_fsl", "data.generate_doc_lengths=true",
                        "data.source_group_size=1", "data.seq_len=256",
                        "data.global_batch_tokens=1024", "data.micro_batch_tokens=256",
                        "model.yarn_factor=4", "model.yarn_old_context_len=64",
                        "scheduler.name=linear_with_warmup", "scheduler.warmup_steps=1",
                        "scheduler.alpha_f=0.0"], capture_output=True, text=True, env=env)
    check(p.returncode == 0, f"stage 3 failed: {p.stdout[-500:]}\n{p.stderr[-1500:]}")
    if p.returncode != 0:
        sys.exit(1)

    st1, st2, st3 = (os.path.join(s, "step6" if s == s1 else "step4") for s in (s1, s2, s3))
    check(start(s2)["start"] == "phase" and start(s2)["from"].endswith("step6"),
          f"stage 2 did not start from stage 1's step6: {start(s2)}")
    check(start(s3)["start"] == "phase" and start(s3)["from"].endswith("step4") and
          start(s3)["world"] == 2, f"stage 3 did not start from stage 2's step4: {start(s3)}")
    for run in (s2, s3):
        steps = [r["step"] for r in ot.read_metrics(run)]
        check(steps == [1, 2, 3, 4], f"{run}: steps {steps} (trainer state should restart)")
        check(all(math.isfinite(r["loss"]) for r in ot.read_metrics(run)), f"{run}: loss not finite")
    counts = [state(d)["optim"]["steps"][0] for d in (st1, st2, st3)]
    check(counts == [6, 10, 14], f"AdamW step counts {counts}, expected carried 6 -> 10 -> 14")
    check(state(st3)["loader"]["tokens_processed"] == 4 * 1024,
          f"stage 3 loader state did not restart: {state(st3)['loader']}")
    cfg3 = state(st3)["config"]
    check("packed_fsl" in cfg3 and "yarn_factor: 4" in cfg3, "stage 3 config not recorded")
    check(state(st3)["model"]["d_model"] == 64, "stage 3 model section missing")
    batch = ot.read_metrics(s2)[0]
    print("stage losses:", [round(ot.read_metrics(s)[-1]["loss"], 4) for s in (s1, s2, s3)],
          "AdamW steps", counts, "stage-2 first loss", round(batch["loss"], 5))
    probe = os.path.join(tmp, "probe")
    ot.olmo("train", td.tiny_config(), *base, f"trainer.run_dir={probe}", "trainer.max_steps=1",
            f"trainer.load_path={s1}", "trainer.load_trainer_state=false", "optim.lr=1e-12",
            "optim.weight_decay=0")
    a, b = weights(st1), weights(os.path.join(probe, "step1"))
    worst = max(float(np.max(np.abs(a[n] - b[n])) / (np.sqrt(np.mean(a[n] ** 2)) + 1e-30))
                for n in a)
    print(f"stage 1 final weights vs stage 2 start (lr 1e-12, 1 step): max |dw|/rms {worst:.2e}")
    check(worst < 1e-6, f"stage 2 did not start from stage 1's weights ({worst:.2e})")
    shutil.rmtree(tmp, ignore_errors=True)
    finish("stage_chain")


if __name__ == "__main__":
    main()
