"""OLMo-core's own Trainer as the reference run, side by side with olmo.cpp (issue 19), at tiny
scale (tests/configs/tiny.yaml, 20 steps, random token files from olmo_test/tiny_data.py):
  1. scripts/olmo_core_run.py --noise-floor writes a complete reference run (config.yaml,
     metrics.jsonl in our schema with instance indices, validation.jsonl, OLMo-core checkpoint,
     init_hf/, noise_floor.json with a non-zero floor from both twins: noise_twin (1 ulp) and
     clip_twin, whose logged clip norm is its float64 norm rounded to fp32);
  2. `olmo train ... trainer.init_from_hf=REF/init_hf validation.reference=REF` raises no
     validation alarm and `olmo compare RUN REF` exits 0: instance indices, tokens, LR and skip
     decisions equal at every step, loss / z-loss / grad norm / held-out loss / entropies within
     validation.reference_floor_multiple (20) noise floors, the table naming the twin that set
     each floor; a smaller multiple (0.1, from the
     run's config or `--floor-multiple`) turns the same comparison into exit 3, and the flag
     overrides the config;
  3. one-hyperparameter typos in olmo.cpp's config are flagged by `olmo compare` (exit 3, naming
     the step and quantity) within 20 steps: beta2 0.95 -> 0.99, beta1 0.9 -> 0.91, eps 1e-8 ->
     1e-6 (by loss / grad norm / a group's update RMS), embedding weight decay 0 -> 0.1 (by the
     embeddings' weight RMS, param_rms.weight.embed, at step 1), lr x 1.1 (LR), z-loss off;
  4. bad input: a field OLMo-core cannot express is refused by name; an incomplete reference
     and a reference with another data config are errors naming the problem;
  5. on the same stage-1 runs: stage 2 on both sides, the stage boundary, and a migration each
     way (olmo_core_chain_checks.py).
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

import olmo_test as ot
from olmo_core_chain_checks import chain
from olmo_test import PY, check, finish
from olmo_test import tiny_data
from olmo_test.refs import RUNNER, compare, first_violation, reference


def main():
    with tempfile.TemporaryDirectory() as tmp:
        d = tiny_data.make_data(os.path.join(tmp, "data"))
        shared = [f"eval.sets={{val: {d['val']}}}", "validation.interval=5",
                  "validation.max_instances=8"]
        s1 = [f"data.mix={d['mix']}", "trainer.save_interval=10"]
        common = shared + s1
        ref = os.path.join(tmp, "ref")
        p = reference(tiny_data.tiny_config(), common, ref)
        print(p.stdout[-600:])
        check(p.returncode == 0, "olmo_core_run.py --noise-floor succeeds")
        if p.returncode != 0:
            finish("olmo_core_ref")  # exits 1
        for f in ("config.yaml", "metrics.jsonl", "validation.jsonl", "reference.json",
                  "noise_floor.json", "init_hf/model.safetensors", "init_hf/config.json",
                  "step10/model_and_optim", "step20/model_and_optim", "step20/train/rank0.pt"):
            check(os.path.exists(os.path.join(ref, f)), f"reference run has {f}")
        recs = ot.read_metrics(ref)
        check([r["step"] for r in recs] == list(range(1, 21)), "reference has train steps 1..20")
        check(all(len(r["instances"]) == 8 for r in recs), "8 instance indices per step")
        check(all(r.get("grad_norm_f64") and abs(r["grad_norm_f64"] / r["grad_norm"] - 1) < 1e-4
                  for r in recs), "float64 grad norm recorded next to OLMo-core's fp32 one")
        vsteps = [json.loads(l)["step"] for l in open(os.path.join(ref, "validation.jsonl"))]
        check(vsteps == [5, 10, 15, 20], f"validation records at 5,10,15,20 ({vsteps})")
        nf = json.load(open(os.path.join(ref, "noise_floor.json")))
        check(all(v and v > 0 for k, v in nf["largest"].items()), f"noise floor non-zero: {nf['largest']}")
        check(sorted(nf.get("twins", {})) == ["clip_twin", "noise_twin"],
              f"noise_floor.json records both twins ({sorted(nf.get('twins', {}))})")
        check(all(nf["train"]["loss"][s] == max(t["train"]["loss"][s] for t in nf["twins"].values())
                  and nf["set_by"]["train.loss"][s] in nf["twins"] for s in nf["train"]["loss"]),
              "the floor is the larger twin's difference at every step, and names that twin")
        # The clip twin clips with (and logs) its float64 norm rounded to fp32 at every step; the
        # reference's fp32 norm is not that at some step (else the twin would be the reference).
        clip = ot.read_metrics(os.path.join(ref, "clip_twin"))
        f32 = [float(np.float32(r["grad_norm_f64"])) for r in clip]
        ref_off = [r["step"] for r in recs if r["grad_norm"] != float(np.float32(r["grad_norm_f64"]))]
        check(all(r["grad_norm"] == f for r, f in zip(clip, f32)) and ref_off
              and recs[0]["grad_norm_f64"] == clip[0]["grad_norm_f64"],
              "clip_twin: the reference's step-1 gradient, clipped with its float64 norm at every "
              f"step (the reference's fp32 norm differs from it at steps {ref_off})")

        # 2. olmo.cpp from the same initial weights.
        ours = os.path.join(tmp, "ours")
        ot.olmo("train", tiny_data.tiny_config(), *common, f"trainer.run_dir={ours}",
                       f"trainer.init_from_hf={ref}/init_hf", "trainer.log_batch_indices=true",
                       f"validation.reference={ref}")
        alarms = [r for r in ot.read_metrics(ours, "alarm")]
        check(not alarms, f"validation.reference=REF: no alarm ({alarms[:2]})")
        rc, out = compare(ours, ref)
        print(out)
        check(rc == 0, f"olmo compare RUN REF exits 0 (got {rc})")
        check("tokens_digest" in out and "instances" in out and "validation.model_entropy" in out,
              "the comparison covers tokens, indices and validation entropies")
        check("bound: 20 x" in out, "default noise-floor multiple 20")
        check("twin clip_twin" in out and re.search(r"train\.loss .* (noise|clip)_twin\n", out),
              "the comparison names the twins and which one set each floor")
        # The multiple decides the verdict: 0.1 floors flags the same honest run, from the run's
        # config or from the flag; the flag overrides the config.
        rc, out = compare(ours, ref, "--floor-multiple", "0.1")
        check(rc == 3 and "bound: 0.1 x" in out, f"--floor-multiple 0.1: exit 3 (got {rc})")
        strict = os.path.join(tmp, "ours_strict")
        shutil.copytree(ours, strict, ignore=shutil.ignore_patterns("step*"))
        cfg = open(os.path.join(strict, "config.yaml")).read()
        cfg2 = re.sub(r"reference_floor_multiple: \S+", "reference_floor_multiple: 0.1", cfg)
        check(cfg2 != cfg, "run config.yaml holds validation.reference_floor_multiple")
        open(os.path.join(strict, "config.yaml"), "w").write(cfg2)
        rc, out = compare(strict, ref)
        check(rc == 3 and first_violation(out)[0] is not None,
              f"validation.reference_floor_multiple=0.1 in the run's config: exit 3 (got {rc})")
        rc, out = compare(strict, ref, "--floor-multiple", "20")
        check(rc == 0, f"--floor-multiple 20 overrides the config's 0.1 (got {rc})")
        rc, out = compare(ours, ref, "--floor-multiple", "0")
        check(rc == 2 and "--floor-multiple" in out and "> 0" in out,
              "--floor-multiple 0 refused as a usage error (exit 2): " + out.strip()[-120:])

        # 3. One-hyperparameter typos, flagged within 20 steps.
        # Prefixes of the first violation's quantity (param_rms.: any group's weight / update RMS).
        loss_like = ("train.loss", "train.grad_norm", "train.z_loss", "param_rms.")
        for name, over, want in (("beta2 0.95->0.99", ["optim.betas=[0.9,0.99]"], loss_like),
                                 ("beta1 0.9->0.91", ["optim.betas=[0.91,0.95]"], loss_like),
                                 ("eps 1e-8->1e-6", ["optim.eps=1e-6"], loss_like),
                                 ("embedding wd 0->0.1", ["optim.embedding_weight_decay=0.1"],
                                  ("param_rms.weight.embed",)),
                                 ("lr x1.1", ["optim.lr=3.3e-3"], ("lr",)),
                                 ("z-loss off", ["trainer.z_loss_multiplier=0"], ("train.z_loss",))):
            run = os.path.join(tmp, "typo_" + str(len(name)) + name.split()[0])
            ot.olmo("train", tiny_data.tiny_config(), *common, *over,
                           f"trainer.run_dir={run}", f"trainer.init_from_hf={ref}/init_hf",
                           "trainer.log_batch_indices=true")
            rc, out = compare(run, ref)
            step, q = first_violation(out)
            print(f"typo {name}: exit {rc}, first violation step {step} {q}")
            check(rc == 3 and step is not None and step <= 20 and q.startswith(want),
                  f"typo {name} flagged by {want} within 20 steps (exit {rc}, step {step}, {q})")

        # 4. Bad input.
        p = subprocess.run([PY, RUNNER, tiny_data.tiny_config(), *common, "model.precision=bf16_mixed",
                            "--run-dir", os.path.join(tmp, "refused")], capture_output=True, text=True)
        check(p.returncode == 1 and "model.precision" in p.stderr, "unexpressible field refused by name: "
              + p.stderr.strip()[-200:])
        broken = os.path.join(tmp, "broken_ref")
        shutil.copytree(ref, broken, ignore=shutil.ignore_patterns("step*", "noise_twin", "work"))
        lines = open(os.path.join(broken, "metrics.jsonl")).read().splitlines()
        open(os.path.join(broken, "metrics.jsonl"), "w").write("\n".join(lines[:-1]) + "\n")
        rc, out = compare(ours, broken)
        check(rc == 1 and "incomplete reference run" in out, "incomplete reference: " + out.strip()[-160:])
        other = os.path.join(tmp, "other_ref")
        shutil.copytree(ref, other, ignore=shutil.ignore_patterns("step*", "noise_twin", "work"))
        cfg = open(os.path.join(other, "config.yaml")).read().replace("seq_len: 64", "seq_len: 32")
        open(os.path.join(other, "config.yaml"), "w").write(cfg)
        rc, out = compare(ours, other)
        check(rc == 1 and "data.seq_len" in out, "reference with other data: " + out.strip()[-160:])

        # 5. Stage chain and migrations on these stage-1 runs (olmo_core_chain_checks.py).
        chain(tmp, d, tiny_data.tiny_config(), shared, s1, ref, ours)
    finish("olmo_core_ref")


if __name__ == "__main__":
    main()
