"""Stage chain and cross-framework migration against OLMo-core's own Trainer (issue 19), tiny
scale, run by olmo_core_ref_test.py after its stage-1 checks (one ctest test: the stage-1 runs are
shared):
  1. stage 1 (20 steps) in both frameworks from the same weights (REF1/init_hf); at the stage
     boundary (step 20) olmo.cpp's checkpoint and OLMo-core's (read with OLMo-core's helpers)
     agree: weights, exp_avg, exp_avg_sq within 20 x the norm of OLMo-core vs its twins (1-ulp,
     float64 clip norm);
     step counts, tokens seen and loader position equal (scripts/olmo_core_ckpt.py boundary);
  2. stage 2 (mid-training shape: other data and seed, LinearWithWarmup to 0, optimizer state
     carried, trainer state reset) on both sides from their own stage-1 checkpoints: `olmo
     compare` in tolerance against the chained noise floor (stage 2 of the twin chain);
  3. import: OLMo-core's step-10 checkpoint -> `olmo ckpt import-olmo-core` -> olmo.cpp resumes
     to step 20 within the noise floor of OLMo-core continuing itself;
  4. export: olmo.cpp's step-10 checkpoint -> `olmo ckpt export-olmo-core` -> OLMo-core's
     Trainer resumes it to step 20 within the same floor of olmo.cpp continuing itself, and the
     exported state equals ours exactly;
  5. bad input: importing a checkpoint into a config of another architecture is an error.
"""
import os
import shutil

import olmo_test as ot
from olmo_test import check, script
from olmo_test.refs import CKPT, compare, reference


def migrate(*args):
    return ot.olmo("ckpt", *args, check=False)


def chain(tmp, d, cfg, common, s1, ref1, ours1):
    """Sections 1 (boundary) to 5 on the stage-1 runs ref1 (with its noise twin) and ours1 that
    olmo_core_ref_test.py made (tests/configs/tiny.yaml + common + s1)."""
    s2 = [f"data.mix={d['mix2']}", "data.seed=1337", "optim.lr=1e-3",
          "scheduler.name=linear_with_warmup", "scheduler.warmup_steps=0",
          "scheduler.alpha_f=0", "trainer.max_steps=10", "trainer.save_interval=0",
          "trainer.load_trainer_state=false", "trainer.load_optim_state=true"]
    ref2, ours2 = os.path.join(tmp, "ref2"), os.path.join(tmp, "ours2")
    # 1. The stage boundary.
    p = script(CKPT, "boundary", f"{ours1}/step20", f"{ref1}/step20", f"{ref1}/noise_twin/step20",
               f"{ref1}/clip_twin/step20")
    print(p.stdout)
    check(p.returncode == 0 and "IN TOLERANCE" in p.stdout,
          "stage boundary: weights and both moments within the floor, counts equal")

    # 2. Stage 2 on both sides, each from its own stage-1 checkpoint.
    check(reference(cfg, common + s2 + [f"trainer.load_path={ref1}"], ref2).returncode == 0,
          "stage 2 reference from OLMo-core's stage-1 checkpoint + chained twin")
    ot.olmo("train", cfg, *common, *s2, f"trainer.load_path={ours1}",
                   f"trainer.run_dir={ours2}", "trainer.log_batch_indices=true",
                   f"validation.reference={ref2}")
    rc, out = compare(ours2, ref2)
    print(out)
    check(rc == 0 and "10 train steps" in out, f"stage 2: olmo compare in tolerance (exit {rc})")
    check(not ot.read_metrics(ours2, "alarm"), "stage 2: no validation alarm")
    check([r["step"] for r in ot.read_metrics(ref2)] == list(range(1, 11)),
          "stage 2 reference restarts at step 1 (trainer state reset)")

    # 3. Import OLMo-core step 10 -> olmo.cpp continues.
    imp = os.path.join(tmp, "imported")
    p = migrate("import-olmo-core", f"{ref1}/step10", imp)
    check(p.returncode == 0 and os.path.exists(f"{imp}/step10/COMMITTED"),
          "import-olmo-core writes an olmo.cpp checkpoint: " + (p.stdout + p.stderr).strip()[-200:])
    p = ot.olmo("ckpt", "verify", f"{imp}/step10", check=False)
    check(p.returncode == 0 and "fingerprints match" in p.stdout,
          "the imported checkpoint carries fingerprints that verify: " + (p.stdout + p.stderr)[-300:])
    p = ot.olmo("train", cfg, *common, *s1, f"trainer.run_dir={imp}",
                       "trainer.log_batch_indices=true")
    check("not verified" not in p.stdout + p.stderr,
          "the resume of the imported checkpoint verifies the state it loaded")
    rc, out = compare(imp, ref1)
    print(out)
    check(rc == 0 and "from step 11" in out,
          f"imported run continues within the floor of OLMo-core continuing itself (exit {rc})")

    # 4. Export olmo.cpp step 10 -> OLMo-core resumes.
    exp = os.path.join(tmp, "exported")
    p = migrate("export-olmo-core", f"{ours1}/step10", exp)
    check(p.returncode == 0 and os.path.isdir(f"{exp}/step10/model_and_optim"),
          "export-olmo-core writes an OLMo-core checkpoint: " + (p.stdout + p.stderr).strip()[-200:])
    p = script(CKPT, "boundary", f"{ours1}/step10", f"{exp}/step10", f"{ref1}/noise_twin/step10")
    check(p.returncode == 0 and " 0 " in p.stdout.splitlines()[1],
          "exported state equals ours (|| diff || = 0)")
    check(reference(cfg, common + s1, exp, noise_floor=False).returncode == 0,
          "OLMo-core's Trainer resumes the exported checkpoint")
    shutil.copy(f"{ref1}/noise_floor.json", f"{exp}/noise_floor.json")
    rc, out = compare(ours1, exp)
    print(out)
    check(rc == 0 and "10 train steps" in out,
          f"OLMo-core from our step 10 stays within the floor of olmo.cpp continuing (exit {rc})")

    # 5. Another architecture.
    p = migrate("import-olmo-core", f"{ref1}/step20", os.path.join(tmp, "bad"),
                "model.ffn_hidden=256")
    msg = (p.stdout + p.stderr).strip()
    check(p.returncode == 1 and "another architecture" in msg, "another architecture: " + msg[-200:])
