"""A throwaway one-node Slurm for the tests/launch/slurm_*.py tests, made from Debian's packages
(slurm-wlm 22.05, munge; recipe in ../shared/reference/slurm_one_node.md) and living entirely in
a temp dir: its own munge key and socket, its own slurm.conf (SLURM_CONF points every client
command at it), state, spool, logs and pid files, and its own ports. Nothing under /etc is read
or changed, so it never meets a site Slurm.

    with Cluster(tmp) as c:        # starts munged, slurmctld, slurmd; waits for the node idle
        job = c.sbatch(script)     # job id
        c.wait_job(job, 120)       # final `scontrol show job` fields

The daemons are stopped (by the pids they wrote) when the block ends, also on failure, and at
interpreter exit. missing() says which package or prerequisite is absent, for a visible skip.
"""
import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import olmo_test as ot
from olmo_test import tiny_data as td

SBIN = "/usr/sbin"
NEEDED = [("munged", "munge"), ("slurmctld", "slurmctld (slurm-wlm)"), ("slurmd", "slurmd (slurm-wlm)")]
CLIENTS = ["sbatch", "srun", "scontrol", "squeue", "scancel", "sinfo"]


def missing():
    """None when a one-node Slurm can be started here, else the reason (names the missing
    file or package: check_skips.py checks the path really is absent)."""
    for exe, pkg in NEEDED:
        p = os.path.join(SBIN, exe)
        if not os.path.exists(p):
            return f"{p} missing (Debian package {pkg}; apt-get install slurm-wlm munge)"
    for exe in CLIENTS:
        if shutil.which(exe) is None:
            return f"/usr/bin/{exe} missing (Debian package slurm-client; apt-get install slurm-wlm)"
    if os.geteuid() != 0:
        return "not root: slurmd must run as root to start jobs (SlurmUser=root)"
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, tmp, cpus=2, cred_expire=5, nodes=None):
        """nodes: None = one node named after this host with `cpus` CPUs; else a list of node
        names, each its own slurmd on this machine (`slurmd -N NAME`, its own port, spool,
        TmpFS and logs: DIR/spool-NAME ...) with `cpus` CPUs each. Open MPI ranks on two such
        nodes talk TCP over loopback (mpi_env())."""
        self.dir = os.path.join(tmp, "slurm")
        self.host = socket.gethostname().split(".")[0]
        self.nodes = nodes
        self.cpus = cpus
        self.cred_expire = cred_expire  # also how long a requeued job waits before it restarts
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.pids = []  # (name, pid file)

    def _write_conf(self):
        d = self.dir
        for sub in ("state", "spool", "munge", *[f"{x}-{n}" for n in self.nodes or [] for x in ("spool", "tmp")]):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        self.sock = os.path.join(d, "munge", "munge.socket")
        key = os.path.join(d, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        os.chmod(os.path.join(d, "munge"), 0o700)
        self.key = key
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=olmotest
SlurmctldHost={self.host}
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.sock},cred_expire={self.cred_expire}
StateSaveLocation={d}/state
SlurmctldLogFile={d}/ctld.log
SlurmctldPidFile={d}/ctld.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobRequeue=1
KillWait=3
MinJobAge=600
SchedulerParameters=sched_interval=1
PartitionName=p Nodes={",".join(self.nodes or [self.host])} Default=YES MaxTime=INFINITE State=UP
""")
            if not self.nodes:
                f.write(f"SlurmdSpoolDir={d}/spool\nSlurmdLogFile={d}/d.log\nSlurmdPidFile={d}/d.pid\n"
                        f"NodeName={self.host} CPUs={self.cpus} State=UNKNOWN\n")
                return
            # Several slurmd on one machine: per-node paths (%n = node name), a short timeout
            # so that a killed node is marked DOWN within seconds.
            f.write(f"SlurmdSpoolDir={d}/spool-%n\nSlurmdLogFile={d}/d-%n.log\n"
                    f"SlurmdPidFile={d}/d-%n.pid\nTmpFS={d}/tmp-%n\nSlurmdTimeout=5\n")
            for n in self.nodes:
                f.write(f"NodeName={n} NodeHostname={self.host} NodeAddr=127.0.0.1 Port={free_port()} "
                        f"CPUs={self.cpus} State=UNKNOWN\n")

    def _start(self, name, argv, pid_file):
        p = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({p.returncode}): {p.stdout}{p.stderr}"
                               f"{self.logs()}")
        t0 = time.time()
        while not os.path.exists(pid_file) and time.time() - t0 < 10:
            time.sleep(0.05)
        self.pids.append((name, pid_file))

    def __enter__(self):
        os.makedirs(self.dir, exist_ok=True)
        self._write_conf()
        atexit.register(self.stop)
        d = self.dir
        self._start("munged", [f"{SBIN}/munged", "--force", f"--socket={self.sock}",
                               f"--key-file={self.key}", f"--pid-file={d}/munge/munged.pid",
                               f"--log-file={d}/munge/munged.log", f"--seed-file={d}/munge/seed"],
                    f"{d}/munge/munged.pid")
        self._start("slurmctld", [f"{SBIN}/slurmctld", "-f", self.conf, "-i"], f"{d}/ctld.pid")
        if self.nodes:
            for n in self.nodes:
                self._start(f"slurmd {n}", [f"{SBIN}/slurmd", "-f", self.conf, "-N", n], f"{d}/d-{n}.pid")
        else:
            self._start("slurmd", [f"{SBIN}/slurmd", "-f", self.conf], f"{d}/d.pid")
        t0 = time.time()
        while True:
            p = self.run(["sinfo", "-h", "-N", "-o", "%T"], check=False)
            if p.stdout.split() == ["idle"] * len(self.nodes or [1]):
                break
            if time.time() - t0 > 30:
                raise RuntimeError(f"the node did not become idle in 30 s (sinfo: {p.stdout}{p.stderr})"
                                   f"{self.logs()}")
            time.sleep(0.2)
        self.started = time.time() - t0
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def daemon_pid(self, name, pid_file):
        """The pid in pid_file if that process still is the daemon (a pid file left by a killed
        daemon may name a reused pid: never signalled), else None."""
        try:
            pid = int(open(pid_file).read().split()[0])
            exe = name.split()[0]
            if exe.encode() in open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[0]:
                return pid
        except (OSError, ValueError, IndexError):
            pass
        return None

    def stop(self):
        for name, pid_file in reversed(self.pids):
            try:
                pid = self.daemon_pid(name, pid_file)
                if pid is None:
                    continue
                os.kill(pid, signal.SIGTERM)
                for _ in range(100):
                    os.kill(pid, 0)
                    time.sleep(0.05)
                os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError):
                pass
        self.pids = []

    def logs(self, n=20):
        out = ""
        for f in ("ctld.log", "d.log", *[f"d-{x}.log" for x in self.nodes or []], "munge/munged.log"):
            p = os.path.join(self.dir, f)
            if os.path.exists(p):
                out += f"\n--- {p} (last {n} lines)\n" + "".join(open(p).readlines()[-n:])
        return out

    def run(self, argv, check=True, timeout=60):
        p = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({p.returncode}): {p.stdout}{p.stderr}")
        return p

    def sbatch(self, script, args=(), env=None):
        e = dict(self.env)
        e.update(env or {})
        p = subprocess.run(["sbatch", "--parsable", *args, script], env=e, capture_output=True,
                           text=True, timeout=60)
        if p.returncode != 0:
            raise AssertionError(f"sbatch {script} failed ({p.returncode}): {p.stdout}{p.stderr}")
        return p.stdout.strip().split(";")[0]

    def job(self, job):
        """`scontrol show job -o JOB` as a dict (JobState, Restarts, ExitCode, ...)."""
        p = self.run(["scontrol", "show", "job", "-o", job], check=False)
        out = {}
        for w in p.stdout.split():
            if "=" in w:
                k, v = w.split("=", 1)
                out.setdefault(k, v)
        return out

    def completed(self, job, script, t0, what, restarts=None):
        """Waits for job (sbatch'ed script, started at t0), prints its end, and checks that it
        COMPLETED with exit 0:0 (and `restarts` requeues when given); True when so."""
        j = self.wait_job(job, 240)
        out = open(script + ".out").read() if os.path.exists(script + ".out") else ""
        print(f"{what}: job {job} {j.get('JobState')} exit {j.get('ExitCode')} restarts "
              f"{j.get('Restarts')} on {j.get('NodeList')} in {time.time() - t0:.1f} s", flush=True)
        return ot.check(j.get("JobState") == "COMPLETED" and j.get("ExitCode") == "0:0"
                     and (restarts is None or j.get("Restarts") == str(restarts)),
                     f"{what}: job {j}\n{out[-4000:]}{self.logs(15)}")

    def wait_job(self, job, timeout, states=("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                                            "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")):
        t0 = time.time()
        while True:
            j = self.job(job)
            if j.get("JobState") in states:
                return j
            if time.time() - t0 > timeout:
                raise AssertionError(f"job {job} not finished after {timeout} s: {j}{self.logs()}")
            time.sleep(0.2)


# --- the olmo runs of the Slurm tests ---------------------------------------------------------


def dist_helpers():
    """tests/distributed's dist_util and launch_util (tiny data, the reference comparison; on
    PYTHONPATH through olmo_py_test)."""
    import dist_util
    import launch_util
    return dist_util, launch_util


def olmo_bin():
    return os.path.abspath(ot.bin_path())


def job_script(path, tasks, body, extra=()):
    """An sbatch script: #SBATCH lines (tasks, output appended across requeues) and body."""
    lines = ["#!/bin/bash", f"#SBATCH --ntasks={tasks}", "#SBATCH --cpus-per-task=1",
             f"#SBATCH --output={path}.out", "#SBATCH --open-mode=append", *extra,
             'echo "job $SLURM_JOB_ID restart ${SLURM_RESTART_COUNT:-0} on $SLURM_JOB_NODELIST"',
             *body]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(path, 0o755)
    return path


def launch_line(config, overrides, args=()):
    q = " ".join(f"'{x}'" for x in [olmo_bin(), "launch", *args, config, *overrides])
    return f"exec {q}"


def job_env():
    e = dict(os.environ)
    e.pop("OMP_NUM_THREADS", None)
    return e


def mpi_env():
    """Open MPI over loopback TCP: ranks on two Slurm nodes of one machine (by default Open MPI
    leaves the loopback interface out, and the nodes' names differ, so it does not use shared
    memory between them)."""
    return {"OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo"}


def skip_if_missing():
    why = missing()
    if why:
        ot.skip(why)


def pin_binary(tmp):
    """Copies OLMO_BIN into tmp and points OLMO_BIN there, so that the reference run, the sbatch
    jobs (which start later, and again after a requeue) and the checks all run one binary even
    when build/olmo is relinked meanwhile."""
    src = olmo_bin()
    for _ in range(600):  # a relink in progress: the file is briefly missing or not executable
        if os.access(src, os.X_OK):
            break
        time.sleep(0.1)
    dst = os.path.join(tmp, "olmo")
    shutil.copy2(src, dst)
    os.environ["OLMO_BIN"] = dst
    return dst


def reference(du, lu, tmp, steps, extra=()):
    """The tiny data (12 micro-batches a step) and a plain uninterrupted one-process
    `olmo train` of `steps` steps: (data, reference run dir)."""
    data = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 12 * 12)
    ref = os.path.join(tmp, "ref")
    ot.olmo("train", td.tiny_config(), *lu.overrides(data, ref, steps, list(extra)))
    return data, ref


def equal_to_reference(lu, run, ref, steps, what):
    """Checks run's last checkpoint and per-step records against the plain run's."""
    probs = lu.compare_with_reference(run, ref, steps)
    ot.check(not probs, f"{what}: differs from the uninterrupted plain run: {probs}")
    if not probs:
        print(f"{what}: bitwise equal to the uninterrupted plain run at step{steps}", flush=True)


def test_main(prefix, body, slurm=True):
    """Runs body(tmp, du, lu) in a fresh temp dir with the binary pinned (exit 77 first when a
    Slurm is needed and cannot start); removes the dir; exits 1 when a check failed, else
    returns 0."""
    if slurm:
        skip_if_missing()
    du, lu = dist_helpers()
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        pin_binary(tmp)
        body(tmp, du, lu)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ot.finish(prefix.strip("_"))  # exits 1 when a check failed
    return 0
