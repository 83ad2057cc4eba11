"""The `olmo` command line as a parser, driven as a user drives it (whole build/olmo commands):

  1. top level: `olmo --help` lists every command and the exit-code table (0 ok, 1 error,
     2 usage, 3 findings, 4 preempted); `olmo` alone prints usage to stderr and exits 2;
     `--version` prints the project version and a commit of this repository; an unknown
     command exits 2 naming itself and the nearest command.
  2. every command (the table below; `olmo --help` must list no other):
     - `olmo CMD --help` and `olmo help CMD` exit 0 with the same text, showing every flag the
       command had before the CLI11 port (the old parser's known-flag lists: scripts and tests
       rely on those names) -- `olmo data --help` shows --vocab/--eos/--pad/--tokenizer-id;
     - `olmo CMD` with no arguments: usage on stderr, nothing on stdout, exit 2;
     - an unknown flag (a real flag with a typo): exit 2, the message names it and the flag it
       is nearest to; an unknown subcommand likewise;
     - a missing required argument: exit 2, the message names it;
     - a bad value (a word for a number, a value outside the choices): exit 2, the message
       names the flag, and the output path given in a temporary dir was not written.
  3. the two bugs of the hand-written parser: `olmo train CFG --dry-run=0` trains (here: fails
     on a missing data mix, exit 1) instead of dry-running; `--dryrun` is an unknown flag
     (exit 2, "did you mean --dry-run"), not "needs a value".
  4. `--flag=value` gives the same result as `--flag value` (olmo info --json, the bytes of
     olmo data global-indices).
  5. every `build/olmo ...` command line shown in README.md and docs/**/*.md (fenced code
     blocks, and inline code spans that start with build/olmo) parses: train with --dry-run
     (prints the plan), every other command with --parse-only (checks the command line,
     prints the parsed values, runs nothing).

Seen red: against the binary of the hand-written parser (cli/args.h) 106 of 155 checks failed,
among them --dry-run=0 dry-running (exit 0), --dryrun answered "flag --dryrun needs a value",
`olmo help train` printing the top-level help, no --version, `olmo data --help` without
--vocab/--eos/--pad/--tokenizer-id, missing arguments and bad values exiting 1, no-argument
usage on stdout with exit 1. Env: OLMO_BIN, OLMO_SOURCE_DIR. Exit 0 = pass.
"""
import os
import re
import subprocess
import sys
import tempfile

from olmo_test import FAILS, check
from olmo_test.doc_lines import command_lines

SRC = os.environ.get("OLMO_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("OLMO_BIN") or os.path.join(SRC, "build", "olmo")
TINY = os.path.join(SRC, "tests", "configs", "tiny.yaml")


def olmo(*args, env=None):
    """Runs BIN with args in SRC (env: environment variables to set, None: to unset); returns
    (exit status, stdout, stderr)."""
    e = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    p = subprocess.run([BIN, *args], cwd=SRC, capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in e.items() if v is not None})
    return p.returncode, p.stdout, p.stderr


def show(rc, out, err):
    return f"exit {rc}; stdout {out[-600:]!r}; stderr {err[-600:]!r}"


# Per command: the flags (and subcommands) its help must show -- the old parser's known-flag
# lists; an unknown flag (a typo) and the flag it must suggest; a command line missing a required
# argument and the name the message must give; a bad value ({tmp}: an empty temporary dir the
# command must not write into) and the flag the message must name. ckpt keeps its own parser
# (cli/ckpt.cpp, not ported yet): only its help is checked.
COMMANDS = {
    "audit": dict(
        help=["RUN_DIR", "--held-out", "--no-distribution", "--json"],
        typo=(["audit", "RUN", "--no-distributon"], "--no-distribution"),
        missing=(["audit", "--json"], "RUN_DIR"),
        bad=[(["audit", "{tmp}/run", "--json=maybe"], "--json")]),
    "bench": dict(
        help=["step", "--preset", "--seq", "--batch", "--steps", "--warmup", "--optimizer",
              "--precision", "--profile", "--peak-seconds", "--seed", "--json", "--print-clock"],
        typo=(["bench", "step", "--preset", "olmo3-190m", "--warmpu", "1"], "--warmup"),
        missing=(["bench", "step", "--seq", "64"], "--preset"),
        bad=[(["bench", "step", "--preset", "olmo3-190m", "--seq", "abc"], "--seq"),
             (["bench", "step", "--preset", "olmo3-190m", "--precision", "fp8"], "--precision")]),
    "ckpt": dict(help=["verify", "import-olmo-core", "export-olmo-core"]),
    "compare": dict(
        help=["RUN_A", "RUN_B", "--out", "--no-plot", "--floor-multiple"],
        typo=(["compare", "A", "B", "--no-plto"], "--no-plot"),
        missing=(["compare", "A"], "RUN_B"),
        bad=[(["compare", "A", "B", "--floor-multiple", "abc", "--out", "{tmp}/c.png"],
              "--floor-multiple")]),
    "corpus": dict(
        help=["build", "verify", "--go-cap-mb", "--ood-cap-mb", "--shards", "--seed", "--work",
              "--keep-unpacked", "--tokenizer", "--no-dedup", "--dedup-jaccard", "--dedup-bands",
              "--dedup-rows", "--dedup-containment"],
        typo=(["corpus", "build", "DIR", "--no-dedpu"], "--no-dedup"),
        subtypo=(["corpus", "verfy", "DIR"], "verify"),
        missing=(["corpus", "build", "--no-dedup"], "DIR"),
        bad=[(["corpus", "build", "{tmp}/corpus", "--shards", "abc"], "--shards")]),
    "data": dict(
        help=["global-indices", "info", "batches", "eval", "mix", "--size", "--seed", "--epoch",
              "--no-shuffle", "--out", "--mix", "--data-root", "--tokenizer-id", "--tokenizer",
              "--seq-len", "--global-batch", "--vocab", "--eos", "--pad", "--rank", "--world",
              "--batches", "--epochs", "--state-in", "--ignore-fingerprint", "--resume-batch",
              "--state-out", "--out-tokens", "--out-jsonl", "--doc-lens", "--out-targets",
              "--root", "--census", "--list"],
        typo=(["data", "batches", "f.npy", "--seq-le", "8"], "--seq-len"),
        subtypo=(["data", "batchs", "f.npy"], "batches"),
        missing=(["data", "global-indices", "--size", "4", "--seed", "1"], "--out"),
        bad=[(["data", "global-indices", "--size", "abc", "--seed", "1", "--out", "{tmp}/i.bin"],
              "--size"),
             (["data", "eval", "f.npy", "--seq-len", "8", "--eos", "x", "--out-tokens",
               "{tmp}/t.bin"], "--eos")]),
    "evaluate": dict(
        help=["--model", "--tasks", "--limit", "--max-len", "--out", "--docs-out", "--data",
              "--tokenizer", "--kv-budget-gib"],
        typo=(["evaluate", "--model", "M", "--tasks", "fast", "--limt", "2"], "--limit"),
        missing=(["evaluate", "--tasks", "fast"], "--model"),
        bad=[(["evaluate", "--model", "M", "--tasks", "fast", "--limit", "abc", "--out",
               "{tmp}/e.json"], "--limit")]),
    "evaluate-suites": dict(
        help=["SUITE", "--model", "--max-items", "--max-len", "--canaries", "--candidates",
              "--per-count", "--tokenizer", "--out", "--save-hf"],
        typo=(["evaluate-suites", "--model", "M", "--max-itms", "2", "S.jsonl"], "--max-items"),
        missing=(["evaluate-suites", "S.jsonl"], "--model"),
        bad=[(["evaluate-suites", "--model", "M", "--max-items", "abc", "--out", "{tmp}/s.jsonl",
               "S.jsonl"], "--max-items")]),
    "export": dict(
        help=["PATH", "--out", "--tokenizer", "--no-tokenizer", "--max-shard-size", "--hf-vocab",
              "--force", "--config", "--seed"],
        typo=(["export", "P", "--out", "O", "--hf-vocb"], "--hf-vocab"),
        missing=(["export", "P"], "--out"),
        bad=[(["export", "--config", TINY, "--seed", "abc", "--out", "{tmp}/hf"], "--seed")]),
    "generate": dict(
        help=["PATH", "--prompt", "--prompts", "--prompt-ids", "--tokens", "--temperature",
              "--top-k", "--top-p", "--seed", "--eos", "--tokenizer", "--ids", "--json",
              "--logits-out"],
        typo=(["generate", "P", "--prompt", "x", "--tokns", "3"], "--tokens"),
        missing=(["generate", "P"], "--prompt"),
        bad=[(["generate", "P", "--prompt", "x", "--tokens", "abc", "--logits-out",
               "{tmp}/l.bin"], "--tokens")]),
    "info": dict(
        help=["--preset", "--config", "--checkpoint", "--vocab", "--seq", "--batch", "--json",
              "--processes", "--reduce", "--micro-batches", "--exact-accumulator", "--zero-stage",
              "--config-reference"],
        typo=(["info", "--preset", "olmo3-190m", "--jsn"], "--json"),
        missing=(["info", "--json"], "--preset"),
        bad=[(["info", "--preset", "olmo3-190m", "--seq", "abc"], "--seq"),
             (["info", "--preset", "olmo3-190m", "--reduce", "fastest"], "--reduce")]),
    "launch": dict(
        help=["CONFIG", "--np", "--hosts", "--hostfile", "--min-np", "--max-failures",
              "--rsh-agent", "--mpirun", "--mpi-args", "--poll", "--probe-interval",
              "--probe-timeout", "--lock-wait", "--stall-timeout", "--stall-floor",
              "--stall-startup", "--slurm", "--srun", "--srun-args", "--scontrol",
              "--no-requeue", "--dry-run"],
        typo=(["launch", "--np", "2", TINY, "--dryrun"], "--dry-run"),
        missing=(["launch", "--np", "2"], "CONFIG"),
        bad=[(["launch", "--np", "abc", TINY, "trainer.run_dir={tmp}/run"], "--np")]),
    "logits": dict(
        help=["--model", "--tokens", "--out", "--loss", "--grads", "--z-loss"],
        typo=(["logits", "--model", "M", "--tokens", "T", "--los"], "--loss"),
        missing=(["logits", "--tokens", "T", "--loss"], "--model"),
        bad=[(["logits", "--model", "M", "--tokens", "T", "--z-loss", "abc", "--grads",
               "{tmp}/g.safetensors"], "--z-loss")]),
    "plot": dict(  # no typed flag: only the run dir and --out
        help=["RUN_DIR", "--out"],
        typo=(["plot", "RUN", "--ot", "x.png"], "--out"),
        missing=(["plot", "--out", "x.png"], "RUN_DIR")),
    "prepare": dict(
        help=["INPUT", "--out", "--tokenizer", "--threads", "--skip-bad-lines",
              "--max-tokens-per-file", "--part-per-input", "--no-progress", "--dedup",
              "--dedup-heldout"],
        typo=(["prepare", "--out", "O", "--thread", "2", "IN"], "--threads"),
        missing=(["prepare", "IN"], "--out"),
        bad=[(["prepare", "--out", "{tmp}/out", "--threads", "abc", "IN"], "--threads")]),
    "tokenize": dict(
        help=["FILE", "--tokenizer", "--decode", "--jsonl", "--bench", "--repeat"],
        typo=(["tokenize", "--decod", "F"], "--decode"),
        missing=(["tokenize", "--decode"], "FILE"),
        bad=[(["tokenize", "--bench", "--repeat", "abc", "F"], "--repeat")]),
    "train": dict(
        help=["CONFIG", "--dry-run", "--allow-recipe-change"],
        typo=(["train", TINY, "--dryrun"], "--dry-run"),
        missing=(["train", "--dry-run"], "CONFIG"),
        bad=[(["train", TINY, "trainer.run_dir={tmp}/run", "--dry-run=maybe"], "--dry-run")]),
    "verify": dict(
        help=["RUN", "--from", "--to", "--scratch", "--keep-scratch"],
        typo=(["verify", "RUN", "--from", "step2", "--keep-scrach"], "--keep-scratch"),
        missing=(["verify", "RUN"], "--from"),
        bad=[(["verify", "{tmp}/run", "--from", "stepx"], "--from"),
             (["verify", "{tmp}/run", "--from", "2", "--to", "-3"], "--to")]),
}


def top_level():
    rc, out, err = olmo("--help")
    listed = re.findall(r"^  ([a-z][a-z-]*) ", out.split("exit codes")[0], re.M)
    check(rc == 0 and set(listed) == set(COMMANDS),
          "olmo --help exits 0 and lists exactly the commands of this test",
          f"exit {rc}, listed {sorted(listed)}, missing {sorted(set(COMMANDS) - set(listed))}, "
          f"untested {sorted(set(listed) - set(COMMANDS))}")
    table = out.split("exit codes")[-1] if "exit codes" in out else ""
    check(all(re.search(rf"^\s+{c}\s+{w}", table, re.M | re.I) for c, w in
              [(0, "ok"), (1, "error"), (2, "usage"), (3, "findings"), (4, "preempted")]),
          "olmo --help documents the exit codes 0 ok, 1 error, 2 usage, 3 findings, 4 preempted",
          out[-800:])
    rc, out, err = olmo()
    check(rc == 2 and out == "" and "usage" in err, "olmo alone: usage on stderr, exit 2",
          show(rc, out, err))
    rc, out, err = olmo("--version")
    m = re.fullmatch(r"olmo\.cpp (\d+\.\d+\.\d+) \(git ([0-9a-f]{7,40}|unknown)\)\n", out)
    check(rc == 0 and m, "olmo --version prints 'olmo.cpp X.Y.Z (git HASH)'", show(rc, out, err))
    if m and m.group(2) != "unknown":
        g = subprocess.run(["git", "-C", SRC, "cat-file", "-e", m.group(2) + "^{commit}"],
                           capture_output=True)
        check(g.returncode == 0, f"the --version hash {m.group(2)} is a commit of this repository")
    with open(os.path.join(SRC, "CMakeLists.txt")) as f:
        want = re.search(r"project\(olmo_cpp VERSION (\S+)", f.read())
    check(m and want and m.group(1) == want.group(1),
          "the --version number is CMakeLists.txt's project(VERSION)", want and want.group(1))
    rc, out, err = olmo("trian", "tests/configs/tiny.yaml")
    check(rc == 2 and "unknown command 'trian'" in err and "did you mean 'train'" in err,
          "unknown command: exit 2, named, nearest command suggested", show(rc, out, err))
    rc, out, err = olmo("help", "evalute")
    check(rc == 2 and "'evalute'" in err and "'evaluate'" in err,
          "olmo help UNKNOWN: exit 2, nearest command suggested", show(rc, out, err))


def per_command(tmp_root):
    for cmd, spec in COMMANDS.items():
        rc, out, err = olmo(cmd, "--help")
        missing = [f for f in spec["help"] if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])",
                                                           out)]
        check(rc == 0 and not missing, f"olmo {cmd} --help: exit 0, shows {len(spec['help'])} "
              f"flags/arguments", f"exit {rc}, not shown: {missing}")
        rc2, out2, _ = olmo("help", cmd)
        check(rc2 == 0 and out2 == out and out, f"olmo help {cmd} == olmo {cmd} --help",
              f"exit {rc2}")
        if cmd == "ckpt":
            continue  # cli/ckpt.cpp keeps its own parser (not ported yet): help only
        rc, out, err = olmo(cmd)
        check(rc == 2 and out == "" and "usage" in err.lower(),
              f"olmo {cmd} with no arguments: usage on stderr, exit 2", show(rc, out, err))
        args, near = spec["typo"]
        bad = args[-1] if args[-1].startswith("--") else next(a for a in args[::-1]
                                                              if a.startswith("--"))
        rc, out, err = olmo(*args)
        check(rc == 2 and f"unknown flag {bad}" in err and f"did you mean {near}?" in err,
              f"olmo {' '.join(args[:2])} ... {bad}: exit 2, names it, suggests {near}",
              show(rc, out, err))
        if "subtypo" in spec:
            args, near = spec["subtypo"]
            rc, out, err = olmo(*args)
            check(rc == 2 and f"'{args[1]}'" in err and f"'{near}'" in err,
                  f"olmo {cmd} {args[1]}: exit 2, unknown subcommand, suggests {near}",
                  show(rc, out, err))
        args, name = spec["missing"]
        rc, out, err = olmo(*args)
        check(rc == 2 and name in err and "error" in err,
              f"olmo {' '.join(args)}: missing {name}: exit 2, named", show(rc, out, err))
        for args, flag in spec.get("bad", []):
            tmp = tempfile.mkdtemp(dir=tmp_root)
            full = [a.replace("{tmp}", tmp) for a in args]
            rc, out, err = olmo(*full)
            left = os.listdir(tmp)
            check(rc == 2 and flag in err and not left,
                  f"olmo {' '.join(args)}: exit 2, names {flag}, writes nothing",
                  show(rc, out, err) + f"; written: {left}")


def dry_run_bugs(tmp_root):
    run = os.path.join(tempfile.mkdtemp(dir=tmp_root), "run")
    base = ["train", TINY, "data.mix=/nonexistent/cli_test/train.mix", f"trainer.run_dir={run}"]
    rc, out, err = olmo(*base, "--dry-run=0")
    check(rc == 1 and "/nonexistent/cli_test/train.mix" in err and "# resolved config" not in out,
          "olmo train CFG --dry-run=0 does not dry-run (it trains: the missing mix fails it, "
          "exit 1)", show(rc, out, err))
    for v in ["--dry-run", "--dry-run=1", "--dry-run=true"]:
        rc, out, err = olmo(*base, v)
        check(rc == 0 and out.startswith("# resolved config"), f"olmo train CFG {v} dry-runs",
              show(rc, out, err))
    rc, out, err = olmo("train", TINY, "--dryrun")
    check(rc == 2 and "unknown flag --dryrun" in err and "did you mean --dry-run?" in err
          and "needs a value" not in err, "olmo train CFG --dryrun: unknown flag, did you mean "
          "--dry-run, exit 2", show(rc, out, err))
    rc, out, err = olmo("audit", "--nosuch")
    check(rc == 2 and "unknown flag --nosuch" in err, "olmo audit --nosuch: unknown flag, exit 2",
          show(rc, out, err))


def newcomer_defects(tmp_root):
    """Issue 48's CLI defects: a positional after an option group is no "unknown subcommand"; a
    typo of an option-group flag gets its nearest flag; a bad key=value override is a usage
    error (exit 2) naming the nearest key, for a leaf name too; train --help says where the keys
    are listed; --runtime hides the unset test hooks; the plan's "no fit" legend only where a row
    has no fit."""
    demo = os.path.join(SRC, "configs", "demo.yaml")
    for args, extra in [(["info", "--plan", demo], demo),
                        (["generate", "D", "extra", "--prompt", "x"], "extra"),
                        (["info", "--preset", "olmo3-190m", "more"], "more")]:
        rc, out, err = olmo(*args)
        check(rc == 2 and f"unexpected argument '{extra}'" in err and "subcommand" not in err,
              f"olmo {' '.join(args)}: exit 2, '{extra}' an unexpected argument",
              show(rc, out, err))
    rc, out, err = olmo("info", "--prest", "olmo3-190m")
    check(rc == 2 and "did you mean --preset?" in err,
          "olmo info --prest: the nearest flag of an option group is suggested", show(rc, out, err))
    run = os.path.join(tempfile.mkdtemp(dir=tmp_root), "run")
    for override, want in [("optim.lr=abc", "optim.lr"), ("optim.lrr=1e-3", "'optim.lr'"),
                           ("lr=1e-3", "did you mean 'optim.lr'"),
                           ("max_steps=3", "did you mean 'trainer.max_steps'"),
                           ("trainer.lr=1e-3", "did you mean 'optim.lr'"),
                           ("optim.lr", "key=value")]:
        rc, out, err = olmo("train", demo, f"trainer.run_dir={run}", override, "--dry-run")
        check(rc == 2 and want in err and "config.md" in err and "Traceback" not in err,
              f"olmo train CFG {override}: usage error (exit 2) naming {want} and the key list",
              show(rc, out, err))
    check(not os.path.exists(run), "a refused override wrote no run dir", run)
    rc, out, err = olmo("train", "--help")
    check(rc == 0 and "docs/config.md" in out and "olmo info --config-reference" in out,
          "olmo train --help names docs/config.md and olmo info --config-reference", out[-600:])
    rc, out, err = olmo("info", "--runtime", env={k: None for k in os.environ
                                                   if k.startswith("OLMO_TEST_")})
    shown = re.findall(r"^  (OLMO_TEST_\w+)", out, re.M)
    check(rc == 0 and not shown and "test hooks unset" in out,
          "olmo info --runtime lists no unset OLMO_TEST_* hook", f"shown {shown}")
    rc, out, err = olmo("info", "--runtime", env={"OLMO_TEST_NAN": "step=7"})
    check(rc == 0 and "OLMO_TEST_NAN = step=7" in out,
          "olmo info --runtime shows a test hook that is set", show(rc, out, err))
    for args in (["train", demo, f"trainer.run_dir={run}", "--dry-run"],
                 ["info", "--preset", "olmo3-32b"], ["info", "--preset", "olmo3-190m"]):
        rc, out, err = olmo(*args)
        cells = re.findall(r"\bno fit\b(?!:)", out)
        legend = "# no fit:" in out
        check(rc == 0 and bool(cells) == legend, f"olmo {' '.join(args[:3])}: the 'no fit' "
              f"legend printed iff a row has no fit ({len(cells)} cells, legend {legend})",
              show(rc, out, err))


def equals_forms(tmp_root):
    a = olmo("info", "--preset", "olmo3-190m", "--seq", "512", "--processes", "2", "--json")
    b = olmo("info", "--preset=olmo3-190m", "--seq=512", "--processes=2", "--json")
    check(a[0] == 0 and a == b, "olmo info --flag=value gives the output of --flag value",
          show(*b))
    tmp = tempfile.mkdtemp(dir=tmp_root)
    ra = olmo("data", "global-indices", "--size", "100", "--seed", "3", "--epoch", "2",
              "--out", f"{tmp}/a.bin")
    rb = olmo("data", "global-indices", "--size=100", "--seed=3", "--epoch=2", f"--out={tmp}/b.bin")
    same = (ra[0] == rb[0] == 0 and os.path.exists(f"{tmp}/a.bin") and
            open(f"{tmp}/a.bin", "rb").read() == open(f"{tmp}/b.bin", "rb").read())
    check(same and os.path.getsize(f"{tmp}/a.bin") == 400,
          "olmo data global-indices --flag=value writes the bytes of --flag value", show(*rb))


def doc_command_lines():
    """(file:line, argv after build/olmo) of the command lines shown in README.md and docs/
    (olmo_test.doc_lines)."""
    return [(d.where, d.argv) for d in command_lines(SRC)]


def documented_examples():
    lines = doc_command_lines()
    check(len(lines) >= 10, f"found {len(lines)} build/olmo command lines in README.md and docs/",
          [w for w, _ in lines])
    for where, argv in lines:
        if not argv or argv[0].startswith("-") or argv[0] == "help":
            rc, out, err = olmo(*argv)
            check(rc == 0, f"{where}: olmo {' '.join(argv)}", show(rc, out, err))
            continue
        cmd = argv[0]
        if not check(cmd in COMMANDS, f"{where}: olmo {cmd} is a command", " ".join(argv)):
            continue
        if cmd == "ckpt":
            print(f"     {where}: olmo {' '.join(argv)}: ckpt has its own parser (not checked)")
            continue
        if len(argv) == 1 or cmd == "bench" and len(argv) == 2:
            continue  # a command named in prose (`build/olmo train`), no command line
        extra = [a for a in (["--dry-run"] if cmd == "train" else ["--parse-only"]) if a not in argv]
        rc, out, err = olmo(*argv, *extra)
        check(rc == 0, f"{where}: olmo {' '.join(argv + extra)}", show(rc, out, err))


def main():
    if not os.path.exists(BIN):
        print(f"FAIL: {BIN} not found (set OLMO_BIN)")
        sys.exit(1)
    with tempfile.TemporaryDirectory(prefix="olmo_cli_") as tmp_root:
        top_level()
        per_command(tmp_root)
        dry_run_bugs(tmp_root)
        newcomer_defects(tmp_root)
        equals_forms(tmp_root)
        documented_examples()
    if FAILS:
        print(f"cli: {len(FAILS)} check(s) failed")
        sys.exit(1)
    print("cli: all checks passed")


if __name__ == "__main__":
    main()
