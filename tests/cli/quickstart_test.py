"""README's "Train on your own text" as written (issue 48): the fenced block under that heading is
run line by line in an empty directory that has only build/olmo (this build) and configs/ (the
repository's), on my_docs/ made here from real text (three docs/ pages as plain-text documents and
a JSONL file of README paragraphs). `make build` is skipped (the binary is the one under test);
the train line gets `trainer.max_steps=2` (the run's length is no part of the path). Checks: every
line exits 0; olmo prepare wrote data/mine (part files, prepare.json counting the 4 inputs' documents);
olmo train trained configs/quickstart.yaml's model on it into runs/mine (2 train records, a
checkpoint of step 2, no evaluation, validation or benchmark record: none is configured) and
resumes from that checkpoint when run again with max_steps=3. The block must hold exactly the three
commands (make build, olmo prepare, olmo train).
Seen red: configs/quickstart.yaml without its `eval: {sets: {}}` fails it (the demo's held-out
sets are not there: exit 1).
Env: OLMO_BIN, OLMO_SOURCE_DIR. 28 s of CPU (2 + 1 steps of the demo's model, one precision probe: the resume keeps the checkpoint's precision).
"""
import glob
import json
import os
import re
import shlex
import subprocess

from olmo_test import BIN, SRC, check, finish, tmp_dir


def readme_block(heading):
    """The lines of the first fenced block after the README heading that starts with `heading`."""
    text = open(os.path.join(SRC, "README.md"), encoding="utf-8").read()
    m = re.search(rf"^#+ {re.escape(heading)}[^\n]*\n(.*?)^```\n(.*?)^```", text, re.M | re.S)
    return [l for l in m.group(2).splitlines() if l.strip()] if m else []


def make_docs(d):
    os.makedirs(d)
    for i, page in enumerate(["training.md", "data.md", "evaluation.md"]):
        with open(os.path.join(SRC, "docs", page), encoding="utf-8") as f, \
                open(os.path.join(d, f"page{i}.txt"), "w", encoding="utf-8") as out:
            out.write(f.read())
    paras = open(os.path.join(SRC, "README.md"), encoding="utf-8").read().split("\n\n")
    with open(os.path.join(d, "readme.jsonl"), "w", encoding="utf-8") as out:
        for i, p in enumerate(paras):
            out.write(json.dumps({"id": f"readme-{i}", "text": p}) + "\n")
    return 3 + len([p for p in paras if p.strip()])


def run(words, cwd):
    p = subprocess.run(words, cwd=cwd, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "OMP_NUM_THREADS": "2"})
    return p.returncode, p.stdout, p.stderr


def records(run_dir):
    out = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            out.append(json.loads(line))
    return out


def main():
    lines = readme_block("Train on your own text")
    words = [shlex.split(l, comments=True) for l in lines]
    check([w[:2] for w in words] == [["make", "build"], ["build/olmo", "prepare"],
                                     ["build/olmo", "train"]],
          "README's own-data block is make build, olmo prepare, olmo train", lines)
    with tmp_dir("quickstart") as tmp:
        os.makedirs(os.path.join(tmp, "build"))
        os.symlink(os.path.abspath(BIN), os.path.join(tmp, "build", "olmo"))
        os.symlink(os.path.join(SRC, "configs"), os.path.join(tmp, "configs"))
        docs = make_docs(os.path.join(tmp, "my_docs"))
        for w in words[1:]:
            extra = ["trainer.max_steps=2"] if w[1] == "train" else []
            rc, out, err = run(w + extra, tmp)
            if not check(rc == 0, f"{' '.join(w + extra)}: exit 0",
                         f"exit {rc}; {out[-500:]} {err[-800:]}"):
                finish("quickstart")
        prep = os.path.join(tmp, "data", "mine", "prepare.json")
        meta = json.load(open(prep)) if os.path.exists(prep) else {}
        check(meta.get("docs") == docs and glob.glob(os.path.join(tmp, "data/mine/part-*.npy")),
              f"olmo prepare wrote data/mine: {docs} documents", {k: meta.get(k) for k in
                                                                    ("docs", "tokens")})
        run_dir = os.path.join(tmp, "runs", "mine")
        recs = records(run_dir)
        train = [r for r in recs if r.get("kind") == "train"]
        kinds = {r.get("kind") for r in recs}
        check([r["step"] for r in train] == [1, 2], "runs/mine: train records of steps 1 and 2",
              [r["step"] for r in train])
        check(not kinds & {"eval", "validation", "benchmark", "exposure", "downstream"},
              "no evaluation configured: no eval / validation / benchmark record", sorted(kinds))
        check(os.path.isdir(os.path.join(run_dir, "step2")), "runs/mine/step2: the checkpoint",
              os.listdir(run_dir))
        rc, out, err = run(words[2] + ["trainer.max_steps=3", "--allow-recipe-change",
                                       "max_steps"], tmp)
        train = [r["step"] for r in records(run_dir) if r.get("kind") == "train"]
        check(rc == 0 and train == [1, 2, 3], "the same command resumes (step 3 after 2)",
              f"exit {rc}, steps {train}; {err[-400:]}")
    finish("quickstart")


if __name__ == "__main__":
    main()
