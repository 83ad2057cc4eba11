"""`olmo verify RUN --from stepA [--to stepB]` (issue 46 item 5): re-execute a span of a run and
check it bit for bit.

A 6-step run of the tiny model (generated data, a checkpoint every 2 steps, all kept) records a
state fingerprint per step in metrics.jsonl; then:
  1. every train record carries a 16-hex-digit "state_fingerprint", and the fingerprint of the
     step of a checkpoint is the one a resume from that checkpoint reproduces;
  2. `olmo verify RUN --from step2` re-executes steps 3..6: exit 0, checkpoints step4 and step6
     and the fingerprints of steps 2..6 compared; `--to step4` stops at 4; RUN is left exactly
     as it was (every file's bytes and mtime) and the scratch dir is removed;
  3. one bit of one element of a tensor of step4 flipped, checksums resealed (only the bits can
     tell): exit 3, "FINDING step 4" naming the tensor and the element; the same flip without
     resealing: exit 3, the checkpoint named damaged with the tensor;
  4. a recorded fingerprint of step 3 changed in metrics.jsonl: exit 3, step 3 named;
  5. a trajectory that really moved: the training tokens rewritten after the run (same file
     size, so the loader's dataset fingerprint cannot tell): exit 3 at step 3, the first step
     whose batch changed;
  6. bad input: no run dir, no config.yaml, a --from that is not a checkpoint (the ones held are
     listed), --to not after --from, a malformed step (usage, exit 2), a scratch dir inside RUN:
     clear errors naming the problem, exit 1.
Env: OLMO_BIN. Exit 0 = pass.
"""
import hashlib
import os
import re
import shutil

import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td
from olmo_test.ckpt_edit import flip_bit

TENSOR = "model.layers.1.mlp.up_proj.weight"


def snapshot(d):
    """path -> (sha256, mtime_ns) of every file under d."""
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, d)] = (hashlib.sha256(open(p, "rb").read()).hexdigest(),
                                          os.stat(p).st_mtime_ns)
    return out


def verify(*args):
    return ot.olmo("verify", *args, check=False)


def fingerprints(run):
    return {r["step"]: r.get("state_fingerprint") for r in ot.read_metrics(run)}


def main():
    with ot.tmp_dir("run_verify") as tmp:
        data = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 8 * 8)
        run = os.path.join(tmp, "run")
        ot.olmo("train", td.tiny_config(), f"data.mix={data['mix']}", f"trainer.run_dir={run}",
                "trainer.max_steps=6", "trainer.save_interval=2", "trainer.keep_last=10",
                "trainer.param_rms_interval=0")
        # 1. the per-step record
        fp = fingerprints(run)
        check(sorted(fp) == list(range(1, 7)) and
              all(isinstance(v, str) and re.fullmatch(r"[0-9a-f]{16}", v) for v in fp.values()),
              "every train record has a state_fingerprint", fp)
        check(len(set(fp.values())) == 6, "the fingerprints of the 6 steps differ from each other")
        res = os.path.join(tmp, "resumed")
        shutil.copytree(run, res)
        for s in ("step6", "step4"):
            shutil.rmtree(os.path.join(res, s))
        ot.olmo("train", td.tiny_config(), f"data.mix={data['mix']}", f"trainer.run_dir={res}",
                "trainer.max_steps=6", "trainer.param_rms_interval=0")
        check(fingerprints(res) == fp, "a resume from step2 records the same fingerprints 1..6",
              fingerprints(res))

        # 2. the span reproduces; RUN untouched; scratch removed
        before = snapshot(run)
        scratch = os.path.join(tmp, "scratch")
        p = verify(run, "--from", "step2", "--scratch", scratch)
        out = p.stdout + p.stderr
        check(p.returncode == 0 and "reproduced bit for bit" in out, "verify --from step2: exit 0",
              out[-1500:])
        check("5 state fingerprints and 2 checkpoints (step4, step6)" in out,
              "fingerprints of steps 2..6 and checkpoints step4, step6 compared", out[-800:])
        check(snapshot(run) == before, "RUN is left as it was (every file's bytes and mtime)")
        check(not os.path.exists(scratch), "the scratch dir is removed after a clean check")
        p = verify(run, "--from", "2", "--to", "step4")
        out = p.stdout + p.stderr
        check(p.returncode == 0 and "3 state fingerprints and 1 checkpoints (step4)" in out and
              "steps 3..4" in out, "verify --from 2 --to step4 stops at step 4", out[-800:])

        # 3. one bit flipped in a tensor of step4
        for seal in (True, False):
            bad = os.path.join(tmp, f"flip{int(seal)}")
            shutil.copytree(run, bad)
            old, new = flip_bit(os.path.join(bad, "step4"), TENSOR, element=37, seal=seal)
            check(old ^ new == 1, "one bit flipped")
            p = verify(bad, "--from", "step2")
            out = p.stdout + p.stderr
            finding = [ln for ln in out.splitlines() if ln.startswith("FINDING")]
            what = "resealed: the bits" if seal else "not resealed: the checksum"
            check(p.returncode == 3 and len(finding) == 1 and "FINDING step 4:" in finding[0] and
                  TENSOR in finding[0], f"a flipped bit in step4 ({what}): exit 3 naming step 4 and "
                  "the tensor", out[-1500:])
            if seal:
                check("element 37" in finding[0] and "differs in 1 of" in finding[0],
                      "the finding names the element (the only one that differs)", finding)
            else:
                check("damaged" in finding[0], "the finding says the stored piece is damaged",
                      finding)
            kept = re.search(r"the re-execution is kept in (\S+)", out)
            check(kept and os.path.isdir(kept.group(1)), "the re-execution is kept on a finding")
            if kept:
                shutil.rmtree(kept.group(1), ignore_errors=True)

        # 4. a recorded fingerprint changed
        bad = os.path.join(tmp, "metrics")
        shutil.copytree(run, bad)
        path = os.path.join(bad, "metrics.jsonl")
        text = open(path).read()
        want = fp[3]
        text = text.replace(want, ("0" if want[0] != "0" else "1") + want[1:])
        open(path, "w").write(text)
        p = verify(bad, "--from", "step2", "--keep-scratch", "--scratch", os.path.join(tmp, "s4"))
        out = p.stdout + p.stderr
        check(p.returncode == 3 and "FINDING step 3: the state fingerprint after step 3 differs"
              in out, "a changed recorded fingerprint: exit 3 naming step 3", out[-1200:])

        # 5. the trajectory moved: the training tokens rewritten (same size) after the run
        tokens = os.path.join(tmp, "data", "train", "part-0.npy")
        orig = open(tokens, "rb").read()
        td.stream(len(orig) // 4, seed=99).tofile(tokens)
        p = verify(run, "--from", "step2")
        out = p.stdout + p.stderr
        check(p.returncode == 3 and "FINDING step 3: the state fingerprint after step 3 differs"
              in out, "other training data: exit 3 at step 3, the first step it changed",
              out[-1200:])
        kept = re.search(r"the re-execution is kept in (\S+)", out)
        if kept:
            shutil.rmtree(kept.group(1), ignore_errors=True)
        open(tokens, "wb").write(orig)

        # 6. bad input
        for args, want, msg in [
                ((os.path.join(tmp, "nope"), "--from", "step2"), "not a directory", "no run dir"),
                ((os.path.join(tmp, "data"), "--from", "step2"), "no config.yaml",
                 "a dir that is not a run"),
                ((run, "--from", "step3"), "no complete checkpoint step3 to start from (it holds "
                 "step2, step4, step6)", "a --from that is not a checkpoint"),
                ((run, "--from", "step4", "--to", "step4"), "--to must be after --from",
                 "--to not after --from"),
                ((run, "--from", "step2", "--scratch", os.path.join(run, "x")),
                 "overlaps the run dir", "a scratch dir inside RUN")]:
            p = verify(*args)
            check(p.returncode == 1 and want in p.stderr, f"bad input, {msg}: exit 1", p.stderr[-500:])
        p = verify(run, "--from", "stepx")
        check(p.returncode == 2 and "'stepx' is not a step" in p.stderr,
              "a malformed step is a usage error (exit 2)", p.stderr[-300:])
        check(snapshot(run) == before, "RUN is still as it was")
    finish("olmo verify")


if __name__ == "__main__":
    main()
