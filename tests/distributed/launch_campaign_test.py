"""Resize campaign through `olmo launch` (issue 21, item 4): the tiny model (12 micro-batches
per step, dist.reduce=exact, a checkpoint every 2 steps) is pushed through a seeded random
sequence of world sizes (1-4) and kills while the launcher keeps it running:
  kill    kill -9 of a random rank shortly after a train record (mid-step, sometimes in the
          checkpoint that follows), the hostfile set to a random slot count at the same time:
          the launcher must relaunch at once from the newest complete checkpoint on that many
          processes;
  resize  the hostfile set to another slot count: the launcher must stop the job at its next
          checkpoint and relaunch it on the new count.
The world sizes the launcher ran must be the planned ones, every kill must be one failure, and
the finished run must equal a never-resized one-process `olmo train` run bitwise: every tensor
of the final checkpoint (weights, both AdamW moments), every state section (AdamW, skip-step,
loader, trainer step and tokens, fingerprints, RNG), every per-step record, and
`olmo ckpt verify` passes. Seed: OLMO_LAUNCH_SEED (default 21). Env: OLMO_BIN, OLMO_MPIRUN.
"""
import os
import random
import shutil
import signal
import tempfile
import time

import launch_util as lu
import olmo_test as ot
from olmo_test import fail, finish
from olmo_test import tiny_data as td

STEPS, EVENTS = 36, 10


def write_slots(path, n):
    with open(path + ".new", "w") as f:
        f.write(f"localhost slots={n}\n")
    os.replace(path + ".new", path)


def main():
    seed = int(os.environ.get("OLMO_LAUNCH_SEED", "21"))
    rng = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="olmo_launch_campaign_")
    try:
        data = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 12 * (STEPS + 2))
        ref = os.path.join(tmp, "ref")
        t0 = time.time()
        ot.olmo("train", td.tiny_config(), *lu.overrides(data, ref, STEPS))
        ref_s = time.time() - t0

        # The plan: a first size, then EVENTS events at increasing steps, each with a new size
        # (a kill may keep the size: the slots are all still there).
        n0 = n = rng.randint(1, 4)
        plan = []
        for i in range(EVENTS):
            kind = rng.choice(["kill", "resize"])
            m = rng.choice([k for k in range(1, 5) if kind == "kill" or k != n])
            at = 2 + 3 * i + rng.randint(0, 1)      # trigger: a train record of this step
            delay = rng.uniform(0.0, 0.1) if kind == "kill" else 0.0
            plan.append((kind, at, m, delay))
            n = m
        print(f"seed {seed}: start on {n0}, then",
              ", ".join(f"{k}@{a}->{m}" for k, a, m, _ in plan), flush=True)

        run = os.path.join(tmp, "run")
        hostfile = os.path.join(tmp, "hostfile")
        write_slots(hostfile, n0)
        args = ["--hostfile", hostfile, "--mpi-args", lu.MPI_ARGS, "--poll", "0.05",
                "--probe-interval", "0.1", "--max-failures", str(EVENTS + 1), "--lock-wait", "30",
                td.tiny_config(), *lu.overrides(data, run, STEPS)]
        t0 = time.time()
        proc, log = lu.start(args, os.path.join(tmp, "launch.log"))
        want_worlds, kills = [n0], 0
        try:
            for kind, at, m, delay in plan:
                lu.wait_for(lambda: lu.last_train_step(run) >= at, 120, f"step {at}", proc)
                if kind == "kill":
                    # A job between launches (stopped at a resize checkpoint) has no ranks:
                    # kill the next job's rank as soon as it runs.
                    lu.wait_for(lambda: lu.rank_pids(run), 60, f"a live job after step {at}", proc)
                    pids = lu.rank_pids(run)
                    time.sleep(delay)
                    r = rng.choice(sorted(pids))
                    os.kill(pids[r], signal.SIGKILL)
                    write_slots(hostfile, m)
                    kills += 1
                    lu.wait_for(lambda: len(lu.events(run, "failure")) == kills, 60,
                                f"the failure of kill {kills}", proc)
                    print(f"kill -9 rank {r} (pid {pids[r]}) {delay * 1000:.0f} ms after the "
                          f"step-{at} record; slots -> {m}", flush=True)
                else:
                    nres = len(lu.events(run, "resize"))
                    write_slots(hostfile, m)
                    lu.wait_for(lambda: len(lu.events(run, "resize")) > nres, 60,
                                f"the resize to {m}", proc)
                    e = lu.events(run, "resize")[-1]
                    print(f"slots -> {m}: resized {e['from']} -> {e['to']} at the step-{e['step']} "
                          "checkpoint", flush=True)
                want_worlds.append(m)
                lu.wait_for(lambda: len(lu.events(run, "launch")) == len(want_worlds), 60,
                            "the relaunch", proc)
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
        wall = time.time() - t0
        out = open(os.path.join(tmp, "launch.log")).read()
        if proc.returncode != 0:
            fail(f"launcher exit {proc.returncode}:\n{out[-3000:]}")
        worlds = [e["world"] for e in lu.events(run, "launch")]
        # A kill that keeps the size is a restart on the same size (no resize event).
        if worlds != want_worlds:
            fail(f"world sizes launched {worlds}, planned {want_worlds}")
        nfail = len(lu.events(run, "failure"))
        if nfail != kills:
            fail(f"{nfail} failures logged for {kills} kills")
        for e in lu.events(run, "resize"):
            if e["reason"] == "slots changed" and e["step"] % 2:
                fail(f"a slot resize not at a checkpoint boundary: {e}")
        for prob in lu.compare_with_reference(run, ref, STEPS):
            fail(prob)
        lat = [e["restart_latency_s"] for e in lu.events(run, "running") if "restart_latency_s" in e]
        lost = [e["lost_steps"] for e in lu.events(run, "failure")]
        print(f"launched world sizes {worlds}; {kills} kills, "
              f"{len(lu.events(run, 'resize'))} resizes; lost steps per kill {lost}; restart "
              f"latency {min(lat):.2f}-{max(lat):.2f} s; campaign {wall:.1f} s "
              f"(reference run {ref_s:.1f} s)", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("launch campaign (final state bitwise equal to the never-resized run: every tensor, "
           "every state section, every per-step record; olmo ckpt verify passes)")


if __name__ == "__main__":
    main()
