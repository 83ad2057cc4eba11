"""Bitwise resume and checkpoint-corruption fallback, across processes (build/olmo).

1. 20 steps straight (run A) versus 10 steps, save, exit, then a NEW `olmo train` process on
   the same run dir that resumes and runs steps 11-20 (run B): the per-step losses, grad norms
   and LRs in metrics.jsonl and every saved tensor (weights and both AdamW moments) and the
   AdamW step counts at step 20 must be bitwise identical; each train step and each held-out
   eval record (at start and every 5 steps) is in metrics.jsonl exactly once, the eval losses
   equal too.
2. A run with checkpoints at 5, 10, 15; the newest (step15) is damaged three ways (a flipped
   byte in the tensor file, a missing state.json, a truncated tensor file). Each time a direct
   load (trainer.load_path=step15) is refused with an error naming the damage, and a restarted
   `olmo train` warns, falls back to step10, and still ends bitwise equal to run A.
"""
import json
import os
import shutil
import tempfile

import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td


def tensors(step_dir):
    """name -> raw bytes of every tensor of a checkpoint (from its index)."""
    idx = json.load(open(os.path.join(step_dir, "index.json")))
    out = {}
    for t in idx["tensors"]:
        with open(os.path.join(step_dir, t["file"]), "rb") as f:
            f.seek(t["byte_offset"])
            out[t["name"]] = f.read(t["nbytes"])
    return out


def steps_of(run):
    """step -> train record values; each of steps 1..20 must be recorded exactly once (a step
    recorded twice fails here instead of collapsing into one entry)."""
    probs = ot.once_problems(run, 20, [(s, "val") for s in (0, 5, 10, 15, 20)])
    check(not probs, f"{run}: metrics.jsonl: {probs}")
    return ot.train_records(run) if not probs else {}


def optim_state(step_dir):
    return json.load(open(os.path.join(step_dir, "state.json")))["optim"]


def same_final(run, ref, what):
    a, b = tensors(os.path.join(ref, "step20")), tensors(os.path.join(run, "step20"))
    check(sorted(a) == sorted(b), f"{what}: tensor names differ")
    diff = [n for n in a if a[n] != b.get(n)]
    check(not diff, f"{what}: {len(diff)} tensors differ, e.g. {diff[:3]}")
    check(optim_state(os.path.join(ref, "step20")) == optim_state(os.path.join(run, "step20")),
          f"{what}: AdamW step counts differ")


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_resume_")
    try:
        d = td.make_data(tmp)
        base = [td.tiny_config(), f"data.mix={d['mix']}", "trainer.keep_last=5",
                f"eval.sets.val={d['val']}", "eval.interval=5"]
        A, B, C = (os.path.join(tmp, x) for x in ("A", "B", "C"))
        ot.olmo("train", *base, f"trainer.run_dir={A}")
        ot.olmo("train", *base, f"trainer.run_dir={B}", "trainer.hard_stop_steps=10")
        check(sorted(os.listdir(B)).count("step10") == 1, "B: no step10 checkpoint")
        p = ot.olmo("train", *base, f"trainer.run_dir={B}")
        check("resume" in p.stdout and "step10" in p.stdout, f"B: did not resume: {p.stdout}")
        sa, sb = steps_of(A), steps_of(B)
        check(sorted(sa) == list(range(1, 21)) and sorted(sb) == list(range(1, 21)),
              f"steps logged: {sorted(sa)} / {sorted(sb)}")
        for s in range(1, 21):
            check(sa.get(s) == sb.get(s), f"step {s}: {sa.get(s)} != {sb.get(s)}")
        check(ot.eval_records(A) == ot.eval_records(B),
              f"eval losses: {ot.eval_records(A)} != {ot.eval_records(B)}")
        same_final(B, A, "10+10 resume")

        ot.olmo("train", *base, f"trainer.run_dir={C}", "trainer.save_interval=5",
                "trainer.hard_stop_steps=15")
        check(all(os.path.isdir(os.path.join(C, f"step{s}")) for s in (5, 10, 15)),
              f"C checkpoints: {os.listdir(C)}")

        def flip(dd):
            path = os.path.join(dd, "tensors-00000.bin")
            with open(path, "r+b") as f:
                f.seek(1000)
                b = f.read(1)
                f.seek(1000)
                f.write(bytes([b[0] ^ 0x01]))

        def missing(dd):
            os.remove(os.path.join(dd, "state.json"))

        def truncate(dd):
            path = os.path.join(dd, "tensors-00000.bin")
            os.truncate(path, os.path.getsize(path) - 4096)

        for name, damage in (("flipped byte", flip), ("missing file", missing),
                             ("truncated tensor", truncate)):
            R = os.path.join(tmp, "C-" + name.replace(" ", "_"))
            shutil.copytree(C, R)
            damage(os.path.join(R, "step15"))
            p = ot.olmo("train", *base, f"trainer.run_dir={os.path.join(tmp, 'X')}",
                        f"trainer.load_path={os.path.join(R, 'step15')}", check=False)
            check(p.returncode == 1 and "step15" in p.stderr,
                  f"{name}: direct load not refused clearly: rc {p.returncode} {p.stderr}")
            print(f"{name}: direct load -> {p.stderr.strip()}")
            shutil.rmtree(os.path.join(tmp, "X"), ignore_errors=True)
            p = ot.olmo("train", *base, f"trainer.run_dir={R}")
            check("warning" in p.stdout and "step15" in p.stdout,
                  f"{name}: no warning about step15: {p.stdout[:500]}")
            check(f"from {os.path.join(R, 'step10')}" in p.stdout,
                  f"{name}: did not fall back to step10: {p.stdout[:500]}")
            same_final(R, A, name)
            sr = steps_of(R)
            check(all(sr.get(s) == sa.get(s) for s in range(1, 21)), f"{name}: losses differ")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("resume_test")


if __name__ == "__main__":
    main()
