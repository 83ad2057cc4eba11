"""Issue 38 item 7: every long command draws core's one progress bar on stderr when stderr is a
terminal, and nothing extra when it is not; stdout is the same either way (tests parse it).

Each command runs twice: stderr on a pseudo-terminal (os.openpty, 200 columns: what a user at a
terminal sees) and stderr on a pipe (ctest, scripts). Checked for olmo export (tensor bytes),
olmo audit (ledger records, both passes), olmo evaluate (a task's documents), olmo prepare
(input bytes):
  - terminal: stderr redraws the command's bar in place ("\\r<label> [####"), reaches 100%, and
    the last thing written on stderr clears the bar line ("\\r\\033[K"): the next prompt or
    stdout line is not glued to it;
  - pipe: stderr holds no "\\r" and no bar;
  - stdout identical (times masked).
olmo train: trainer.progress=on forces the bar onto a piped stderr (the config key, no
terminal needed): "\\rstep [" on stderr, no "step N/T" log lines on stdout but every message
(the "train:" banner, checkpoints) still there; trainer.progress=off: the plain lines on stdout
and no "\\r" on stderr.
Env: OLMO_BIN, OLMO_SOURCE_DIR (olmo_test). Exit 0 pass, 1 fail, 77 when a part could not run.
Measured 9 s on 2 busy cores.
"""
import array
import fcntl
import json
import os
import random
import re
import struct
import subprocess
import termios
import threading

from olmo_test import SRC, bin_path, check, finish, tmp_dir

TINY = os.path.join(SRC, "tests", "configs", "tiny.yaml")
TOKENIZER = os.path.join(SRC, "data", "tokenizer", "cl100k_base.tiktoken")


def run_pipe(args, ok=(0,)):
    """stdout, stderr of olmo ARGS with both on pipes (exit status in ok). Bytes decoded here:
    olmo_test.olmo's text mode would turn the bar's "\\r" into newlines."""
    p = subprocess.run([bin_path(), *args], capture_output=True, stdin=subprocess.DEVNULL)
    out, err = p.stdout.decode(), p.stderr.decode()
    if p.returncode not in ok:
        raise AssertionError(f"olmo {' '.join(args)} exited {p.returncode}:\n{out}\n{err}")
    return out, err


def run_tty(args, ok=(0,)):
    """Runs with stderr on a pseudo-terminal (200 columns); stdout on a pipe."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # the bytes as the program wrote them (no \n -> \r\n)
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    p = subprocess.Popen([bin_path(), *args], stdout=subprocess.PIPE, stderr=slave,
                         stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []

    def drain():
        while True:
            try:
                b = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                return
            if not b:
                return
            chunks.append(b)

    t = threading.Thread(target=drain)
    t.start()
    out = p.stdout.read()
    p.wait()
    t.join(60)
    os.close(master)
    err = b"".join(chunks).decode(errors="replace")
    if p.returncode not in ok:
        raise AssertionError(f"olmo {' '.join(args)} (tty) exited {p.returncode}:\n"
                             f"{out.decode()}\n{err}")
    return out.decode(), err


def check_command(name, args, label, mask=lambda s: s, ok=(0,)):
    print(f"{name}:")
    out_pipe, err_pipe = run_pipe(args, ok)
    out_tty, err_tty = run_tty(args, ok)
    check(f"\r{label} [" in err_tty, f"{name}: the bar '{label} [' drawn in place on the terminal",
          repr(err_tty[-300:]))
    check("] 100% " in err_tty, f"{name}: the bar reaches 100%")
    check(err_tty.rstrip("\n").endswith("\r\033[K") or
          err_tty.rfind("\r\033[K") > err_tty.rfind(f"\r{label} ["),
          f"{name}: the bar line is cleared after its last draw")
    check("\r" not in err_pipe and "[#" not in err_pipe and "[." not in err_pipe,
          f"{name}: nothing drawn on a piped stderr", repr(err_pipe[-200:]))
    same = mask(out_tty) == mask(out_pipe) and out_pipe.strip() != ""
    check(same, f"{name}: stdout identical with and without a terminal",
          "" if same else f"\n--- pipe\n{out_pipe}--- tty\n{out_tty}")
    return out_pipe


def tiny_tokens(path, n, seed):
    """Random tokens of tests/configs/tiny.yaml's vocabulary (512; EOS 0) as a headerless uint32 file."""
    rng = random.Random(seed)
    a = array.array("I", (0 if i % 61 == 60 else rng.randrange(2, 512) for i in range(n)))
    with open(path, "wb") as f:
        a.tofile(f)


def write_task(d):
    """One acc task of 3 documents in olmo_eval's request format (docs/olmo_eval.md)."""
    os.makedirs(d, exist_ok=True)
    docs = [(0, "Question: Which animal barks?\nAnswer:", [" a dog", " a cat"], 0),
            (1, "Question: Where do fish live?\nAnswer:", [" water", " sand", " trees"], 0),
            (2, "Question: What is ice made of?\nAnswer:", [" water", " rock"], 0)]
    with open(os.path.join(d, "t_acc.jsonl"), "w") as f:
        for doc_id, ctx, conts, gold in docs:
            for i, c in enumerate(conts):
                f.write(json.dumps({"doc_id": doc_id, "cont_id": i, "native_id": f"n{doc_id}",
                                    "context": ctx, "continuation": c, "label": gold,
                                    "gold": i == gold}) + "\n")
    man = {"source": "test", "groups": {"fast": ["t_acc"], "full": ["t_acc"]},
           "tasks": {"t_acc": {"file": "t_acc.jsonl", "metric_type": "acc", "fast_mc": False,
                               "docs": 3, "rows": 7}}}
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(man, f)


def main(tmp):
    os.makedirs(os.path.join(tmp, "data"))
    tiny_tokens(os.path.join(tmp, "data", "part-0.npy"), 64 * 8 * 6, 1)
    mix = os.path.join(tmp, "train.mix")
    with open(mix, "w") as f:
        f.write("tiny,data/part-0.npy\n")

    # train: trainer.progress=on forces the bar (piped stderr); off: plain lines on stdout.
    print("train:")
    run = os.path.join(tmp, "run")
    common = [f"data.mix={mix}", "trainer.max_steps=3", "eval.at_start=false",
              "validation.interval=0", "trainer.threads=1", "trainer.save_interval=3"]
    out_off, err_off = run_pipe(["train", TINY, *common, f"trainer.run_dir={run}-off",
                                 "trainer.progress=off"])
    out_on, err_on = run_pipe(["train", TINY, *common, f"trainer.run_dir={run}",
                               "trainer.progress=on"])
    steps = re.compile(r"^step \d+/3 loss ", re.M)
    ok = len(steps.findall(out_off)) == 3 and "\r" not in err_off
    check(ok, "train off: 'step N/3' lines on stdout, nothing drawn", "" if ok else out_off)
    last = err_on[err_on.rfind("\rstep ["):]
    check("\rstep [" in err_on and "3/3 loss " in last and "\n" in last,
          "train on: the bar on stderr, its last state kept", repr(err_on[-300:]))
    ok = not steps.search(out_on)
    check(ok, "train on: no plain step lines on stdout", "" if ok else out_on)
    ok = bool(re.search(r"^train: tiny: ", out_on, re.M)) and "checkpoint " in out_on
    check(ok, "train on: the messages stay on stdout", "" if ok else out_on)

    # audit of that run.
    check_command("audit", ["audit", run], "audit: order and rows", ok=(0, 2))  # 2: findings
    # (the second pass draws its own bar)
    _, err = run_tty(["audit", run], ok=(0, 2))
    check("\raudit: served distribution [" in err, "audit: the served-distribution pass's bar")

    # export: a tiny model on the dolma2 vocabulary (megabytes of tensors).
    hf = os.path.join(tmp, "hf")
    exp = ["export", "--config", TINY, "model.vocab_size=100352", "--seed", "3", "--out", hf,
           "--no-tokenizer", "--force"]
    check_command("export", exp, "export")

    if not os.path.exists(TOKENIZER):
        print(f"evaluate and prepare part skipped: {TOKENIZER} missing")
        return "evaluate and prepare"
    task_dir = os.path.join(tmp, "tasks")
    write_task(task_dir)
    no_time = lambda s: "\n".join(  # noqa: E731  (the seconds column and the total line)
        (l.rsplit(None, 1)[0] if not l.startswith("total:") else "total")
        for l in s.splitlines())
    check_command("evaluate", ["evaluate", "--model", hf, "--tasks", "t_acc", "--data",
                               task_dir, "--max-len", "64"], "t_acc", mask=no_time)
    corpus = os.path.join(tmp, "corpus.jsonl")
    with open(corpus, "w") as f:
        for i in range(200):
            f.write(json.dumps({"id": f"d{i}", "text": f"Document {i}: " + "word " * 50})
                    + "\n")
    prep = os.path.join(tmp, "prep")
    no_secs = lambda s: re.sub(r"\(\d+\.\d s\)", "(T s)", s)  # noqa: E731
    check_command("prepare", ["prepare", corpus, "--out", prep], "prepare", mask=no_secs)
    out, err = run_tty(["prepare", corpus, "--out", prep, "--no-progress"])
    check("\r" not in err, "prepare --no-progress: nothing drawn on a terminal")

    return None


if __name__ == "__main__":
    with tmp_dir("progress_bar_cli") as d:
        skipped = main(d)
    finish("core_progress_bar_cli", skipped)
