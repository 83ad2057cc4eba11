"""`olmo ckpt verify` and the fingerprint check on every resume (issue 17, part 3).

A 2-process run of the tiny model (dist.reduce=exact) writes a sharded checkpoint; then:
  1. `olmo ckpt verify` passes on it (and on the run dir), and a 1-process resume of it (a
     resharded load) and a 3-process one continue;
  2. a tampered moment element whose piece checksum, index.json and COMMITTED were rewritten to
     match (so only the fingerprint can tell) is refused by `olmo ckpt verify` and by the
     resume, each naming the tensor and the checkpoint, and the resume leaves the run dir as it was;
  3. a tampered state section (skip-step window), with checksums rewritten: refused, naming it;
  4. bad input: a shard file missing, a shard file shorter than index.json says, a piece
     missing from index.json (checksums rewritten): each a clear error naming the file or the
     tensor; a checkpoint without a fingerprint section: `olmo ckpt verify` says so.
The rewritten checksums: olmo_test.ckpt_edit (XXH3-64 from Debian's libxxhash, independent of
our code). Env: OLMO_BIN, OLMO_MPIRUN. Exit 0 = pass.
"""
import json
import os
import shutil
import subprocess
import tempfile

import dist_util as du  # noqa: E402
import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td
from olmo_test.ckpt_edit import reseal, tamper_state, tamper_tensor, xxh

BIN = ot.bin_path()


def verify(path):
    return subprocess.run([BIN, "ckpt", "verify", path], capture_output=True, text=True)


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_ckpt_verify_")
    try:
        data = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 12 * 12)
        run = os.path.join(tmp, "run")
        ov = lambda r, extra=(): du.base_overrides(data, r, steps=4, extra=[  # noqa: E731
            "trainer.hard_stop_steps=2", *extra])
        du.train(2, ov(run))
        ck = os.path.join(run, "step2")
        p = verify(ck)
        check(p.returncode == 0 and "verified" in p.stdout and "fingerprints match" in p.stdout,
              f"verify of a good 2-rank checkpoint: rc {p.returncode} {p.stdout}{p.stderr}")
        p = verify(run)
        check(p.returncode == 0 and ck in p.stdout, f"verify of the run dir: {p.stdout}{p.stderr}")
        for n in (1, 3):
            r = os.path.join(tmp, f"resume{n}")
            shutil.copytree(run, r)
            q = du.train(n, du.base_overrides(data, r, steps=4), check=False)
            check(q.returncode == 0, f"resharded resume 2 -> {n} continues: {q.stderr[-300:]}")

        # 2. a moment element changed, checksums resealed: only the fingerprint can tell
        name = "optim.exp_avg/model.layers.1.mlp.up_proj.weight"
        bad = os.path.join(tmp, "bad_tensor")
        shutil.copytree(run, bad)
        tamper_tensor(os.path.join(bad, "step2"), name)
        p = verify(bad)
        check(p.returncode != 0 and name in p.stderr and "step2" in p.stderr,
              f"verify names the tampered tensor: {p.stderr.strip()}")
        before = sorted(os.listdir(bad))
        q = du.train(1, du.base_overrides(data, bad, steps=4), check=False)
        check(q.returncode != 0 and name in q.stderr and "refusing" in q.stderr and
              os.path.join(bad, "step2") in q.stderr,
              f"resume refuses the tampered state: {q.stderr.strip()[:400]}")
        check(sorted(os.listdir(bad)) == before and not os.path.exists(os.path.join(bad, "step3")),
              "the refused resume left the run dir as it was")

        # 3. a state section changed, checksums resealed
        bad2 = os.path.join(tmp, "bad_state")
        shutil.copytree(run, bad2)
        def bump(s):  # noqa: E306
            key = sorted(k for k in s if isinstance(s[k], list))[0]
            s[key] = list(s[key]) + [1.0]
        tamper_state(os.path.join(bad2, "step2"), "skip_step", bump)
        p = verify(bad2)
        check(p.returncode != 0 and "skip_step" in p.stderr, f"verify names the section: {p.stderr.strip()}")

        # 4. bad input
        b3 = os.path.join(tmp, "missing_shard")
        shutil.copytree(run, b3)
        os.remove(os.path.join(b3, "step2", "tensors-00001.bin"))
        p = verify(os.path.join(b3, "step2"))
        check(p.returncode != 0 and "tensors-00001.bin" in p.stderr and "missing" in p.stderr,
              f"missing shard file named: {p.stderr.strip()}")
        b4 = os.path.join(tmp, "short_shard")
        shutil.copytree(run, b4)
        f1 = os.path.join(b4, "step2", "tensors-00001.bin")
        os.truncate(f1, os.path.getsize(f1) // 2)
        p = verify(os.path.join(b4, "step2"))
        check(p.returncode != 0 and "tensors-00001.bin" in p.stderr and "truncated" in p.stderr,
              f"short shard file named: {p.stderr.strip()}")
        b5 = os.path.join(tmp, "dropped_piece")
        shutil.copytree(run, b5)
        d5 = os.path.join(b5, "step2")
        index = json.load(open(os.path.join(d5, "index.json")))
        pieces = [t for t in index["tensors"] if t["name"].startswith("optim.exp_avg_sq/")]
        victim = [t for t in pieces if sum(1 for u in pieces if u["name"] == t["name"]) > 1][0]
        index["tensors"].remove(victim)
        reseal(d5, index)
        p = verify(d5)
        check(p.returncode != 0 and victim["name"] in p.stderr and "pieces hold" in p.stderr,
              f"a piece missing from index.json named: {p.stderr.strip()}")
        b6 = os.path.join(tmp, "no_fingerprint")
        shutil.copytree(run, b6)
        tamper_state(os.path.join(b6, "step2"), "callbacks", lambda s: None)
        st = json.load(open(os.path.join(b6, "step2", "state.json")))
        st.pop("fingerprint")
        text = json.dumps(st).encode()
        open(os.path.join(b6, "step2", "state.json"), "wb").write(text)
        index = json.load(open(os.path.join(b6, "step2", "index.json")))
        index["files"]["state.json"] = {"nbytes": len(text), "checksum": xxh(text)}
        reseal(os.path.join(b6, "step2"), index)
        p = verify(os.path.join(b6, "step2"))
        check(p.returncode != 0 and "no fingerprint section" in p.stderr,
              f"no fingerprint section: {p.stderr.strip()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("ckpt verify")


if __name__ == "__main__":
    main()
