"""Multi-host for real (issue 21, item 3): two "hosts" are network namespaces on this machine
(2 slots each), joined to the root namespace by veth pairs on a bridge, each running a stand-in
sshd (a TCP listener on port 22); mpirun (root namespace) reaches them through a remote shell
that connects to HOST:22 over the bridge (failing like ssh when that fails) and then runs
`ip netns exec HOST sh -c CMD`; OpenMPI talks over TCP only
(btl tcp,self: no shared memory, across hosts or within one). Under `olmo launch --hosts`:
  1. kill -9 every process of host 2 (its sshd too) inside step 6 -- rank 2 holds there
     (OLMO_TEST_HOLD, train/test_faults.h), so the kill lands in the step -- its link down:
     the launcher shrinks 4 -> 2 processes on host 1 and goes on from the newest checkpoint;
  2. host 2 comes back (link up, sshd restarted): the launcher grows to 4 at the next checkpoint;
  3. kill -9 every process of host 1 while a checkpoint is being written (rank 2 holds with its
     shard of the first checkpoint from step 10 on written, so stepN is never committed), link
     down: shrink to 2 on host 2, resume from the checkpoint before;
  4. (a second run) host 2's link cut inside step 6 (rank 2 holds there while the link is cut,
     then goes on), its processes left alive: the job hangs; the
     launcher's --stall-timeout (3x the longest restart measured in 1-3) stops it, relaunches on
     host 1 from the newest checkpoint;
each run finishes bitwise equal to a run that never lost a host (a one-process `olmo train`:
with dist.reduce=exact every world size gives the same bits): every tensor, every state
section, every per-step record, `olmo ckpt verify`. The namespaces, veths and bridge are
removed on every exit (also on failure or SIGTERM). Skips (exit 77) where network namespaces
cannot be created. Env: OLMO_BIN, OLMO_MPIRUN; OLMO_LAUNCH_LOG=FILE keeps the launcher's output.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import launch_util as lu
import olmo_test as ot
from olmo_test import skip
from olmo_test import tiny_data as td

STEPS = 60  # long enough that the host returns before the run ends, however fast steps are
CUT_STEPS = 24  # the cut-network run (scenario 4)
STALL_MARGIN = 3  # --stall-timeout = this x the longest restart measured in scenarios 1-3
IP = shutil.which("ip") or "/usr/sbin/ip"


def sh(*args, check=True):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {p.stderr.strip()}")
    return p


class Hosts:
    """Namespaces h1, h2 with 10.X.Y.11/12 on eth0, bridged to the root namespace (10.X.Y.1)."""

    def __init__(self):
        tag = os.getpid() % 100000
        self.ns = [f"olmo{tag}h{i}" for i in (1, 2)]
        self.veth = [f"olv{tag}h{i}" for i in (1, 2)]
        self.br = f"olb{tag}"
        self.net = f"10.{200 + tag % 50}.{tag % 250}"
        self.ips = [f"{self.net}.{11 + i}" for i in range(2)]
        self.created = []

    def up(self):
        sh(IP, "link", "add", self.br, "type", "bridge")
        self.created.append(("link", self.br))
        sh(IP, "addr", "add", f"{self.net}.1/24", "dev", self.br)
        sh(IP, "link", "set", self.br, "up")
        for ns, veth, ip in zip(self.ns, self.veth, self.ips):
            sh(IP, "netns", "add", ns)
            self.created.append(("netns", ns))
            sh(IP, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            self.created.append(("link", veth))
            sh(IP, "link", "set", veth, "master", self.br)
            sh(IP, "link", "set", veth, "up")
            for c in (["addr", "add", f"{ip}/24", "dev", "eth0"], ["link", "set", "eth0", "up"],
                      ["link", "set", "lo", "up"]):
                sh(IP, "netns", "exec", ns, IP, *c)
        for i in range(len(self.ns)):
            self.sshd(i)

    def sshd(self, i):
        """A stand-in sshd in host i: accepts TCP connections on port 22 (the agent's probe)."""
        code = ("import socket\ns = socket.socket()\n"
                "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                "s.bind(('0.0.0.0', 22))\ns.listen(64)\n"
                "while True:\n    s.accept()[0].close()\n")
        subprocess.Popen([IP, "netns", "exec", self.ns[i], sys.executable, "-c", code],
                         start_new_session=True)
        t0 = time.time()
        while time.time() - t0 < 10:
            tcp = sh(IP, "netns", "exec", self.ns[i], "cat", "/proc/net/tcp", check=False).stdout
            if ":0016 " in tcp:  # listening on port 22
                return
            time.sleep(0.05)
        raise RuntimeError(f"the stand-in sshd of {self.ns[i]} did not start")

    def kill_host(self, i):
        """kill -9 every process in host i's namespace; its link down (the host is lost)."""
        pids = sh(IP, "netns", "pids", self.ns[i]).stdout.split()
        for p in pids:
            try:
                os.kill(int(p), signal.SIGKILL)
            except ProcessLookupError:
                pass
        sh(IP, "link", "set", self.veth[i], "down")
        return pids

    def cut(self, i):
        """Host i's link down, its processes left running (a cut cable: nothing dies, nothing
        says so; TCP peers just stop hearing from each other)."""
        sh(IP, "link", "set", self.veth[i], "down")

    def back(self, i):
        sh(IP, "link", "set", self.veth[i], "up")
        self.sshd(i)

    def down(self):
        for ns in self.ns:
            for p in sh(IP, "netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(p), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for kind, name in reversed(self.created):
            if kind == "netns":
                sh(IP, "netns", "del", name, check=False)
            else:
                sh(IP, "link", "del", name, check=False)
        self.created = []


def agent_script(path, hosts):
    cases = "".join(f"  {ip}) ns={ns} ;;\n" for ip, ns in zip(hosts.ips, hosts.ns))
    with open(path, "w") as f:
        f.write(f"""#!/bin/sh
# ssh stand-in: HOST COMMAND... runs COMMAND through sh in HOST's network namespace.
host=$1; shift
case $host in
{cases}  *) echo "ssh: Could not resolve hostname $host" >&2; exit 255 ;;
esac
if ! timeout 2 bash -c "exec 3<>/dev/tcp/$host/22" 2>/dev/null; then
  echo "ssh: connect to host $host port 22: Connection failed" >&2
  exit 255
fi
exec {IP} netns exec $ns /bin/sh -c "$*"
""")
    os.chmod(path, 0o755)


def session_dir(tmp, name):
    """OpenMPI's session directory base for one launcher's jobs, private to it: every "host"
    here has the same hostname and /tmp, so by default the orteds of both hosts, mpirun and any
    other OpenMPI process on the machine (a concurrent test's singleton) share one top session
    dir /tmp/ompi.HOST.UID, which each of them creates and removes as it starts and ends. (A
    remote orted that cannot make its session dir fails its start: mpirun exits 213.)"""
    d = os.path.join(tmp, f"ompi_{name}")
    os.makedirs(d, exist_ok=True)
    return {"OMPI_MCA_orte_tmpdir_base": d}


def cut_network(hosts, agent, mpi, data, tmp, restart_s):
    """Scenario 4: host 2's link cut in the middle of a 2-host run, its processes alive. The
    job hangs (no rank dies); the launcher's --stall-timeout (STALL_MARGIN x the longest restart
    measured in scenarios 1-3) must stop it within the timeout, relaunch on host 1 from the
    newest checkpoint, and the run must end bitwise equal to one that was never cut."""
    fails = []
    stall = round(max(2.0, STALL_MARGIN * restart_s), 2)
    ref = os.path.join(tmp, "ref_cut")
    ot.olmo("train", td.tiny_config(), *lu.overrides(data, ref, CUT_STEPS))
    run = os.path.join(tmp, "run_cut")
    h1, h2 = hosts.ips
    args = ["--hosts", f"{h1}:2,{h2}:2", "--rsh-agent", agent, "--mpi-args", mpi,
            "--poll", "0.05", "--probe-interval", "0.2", "--max-failures", "3",
            "--stall-timeout", str(stall), td.tiny_config(), *lu.overrides(data, run, CUT_STEPS)]
    # The cut lands at a named point: rank 2 (host 2) holds inside step 6 (its first
    # micro-batch's backward done), step 5 recorded; the link is cut, then the hold released,
    # so step 6 can never complete and no step record can come after the cut (the stall clock
    # starts at step 5's record, before the cut: detection within --stall-timeout).
    hold = os.path.join(tmp, "hold.cut")
    proc, log = lu.start(args, os.path.join(tmp, "launch_cut.log"),
                         env={"OLMO_TEST_HOLD": f"step:2:6:{hold}", **session_dir(tmp, "cut")})
    try:
        at = lu.wait_file(hold, 180, proc).split()
        lu.wait_for(lambda: lu.last_train_step(run) >= 5, 60, "step 5's record", proc)
        t_cut = time.time()
        hosts.cut(1)
        os.remove(hold)  # rank 2 goes on into the cut network
        if at[1:] != ["step", "6"]:
            fails.append(f"cut link: the hold point was {at}, not inside step 6")
        lu.wait_for(lambda: lu.events(run, "stalled"), stall + 60, "the stall after the cut", proc)
        st = lu.events(run, "stalled")[0]
        detect = st["time"] - t_cut
        print(f"host 2's link cut after step {lu.last_train_step(run)}: the launcher found the "
              f"job stalled {detect:.2f} s later (--stall-timeout {stall} s = {STALL_MARGIN} x "
              f"the longest restart measured above, {restart_s:.2f} s)", flush=True)
        if detect > stall + 2.0:
            fails.append(f"cut link: stalled {detect:.2f} s after the cut, --stall-timeout {stall}")
        proc.wait(timeout=300)
    finally:
        lu.stop(proc, log)
    out = open(os.path.join(tmp, "launch_cut.log")).read()
    if proc.returncode != 0:
        fails.append(f"cut link: launcher exit {proc.returncode}:\n{out[-4000:]}")
    launches = [(e["world"], e["hosts"]) for e in lu.events(run, "launch")]
    # As in scenarios 1-3, a job that failed on its own before the cut (twice in clean-clone
    # CI runs at -j2, never alone: the first job's mpirun exited 213, a daemon that did not
    # start, while another test loaded both cores) is the launcher's to restart on the same
    # hosts: allowed, shown with what mpirun said. After it: exactly one 'stalled', one relaunch
    # on host 1, the reference bits.
    dedup = [x for i, x in enumerate(launches) if i == 0 or x != launches[i - 1]]
    if dedup != [(4, f"{h1}:2,{h2}:2"), (2, f"{h1}:2")]:
        fails.append(f"cut link: launches {launches}, expected 4 on both hosts, then 2 on host 1")
    status = [e["status"] for e in lu.events(run, "failure")]
    if not status or status[-1] != "stalled" or "stalled" in status[:-1]:
        fails.append(f"cut link: job failures {status}, expected one 'stalled' (after any job "
                     f"that failed on its own); the launcher and mpirun said:\n{out[-6000:]}")
    elif len(status) > 1:
        first = out.split('"status":"stalled"')[0]
        print(f"note: cut link: {len(status) - 1} job failure(s) before the cut ({status[:-1]}), "
              "restarted on the same hosts; mpirun said:\n" + "\n".join(
                  x for x in first.splitlines() if not x.startswith("step "))[-3000:], flush=True)
    fails += [f"cut link: {x}" for x in lu.compare_with_reference(run, ref, CUT_STEPS)]
    rs = [(e["reason"], e["from"], e["to"], e["step"]) for e in lu.events(run, "resize")]
    print("cut link: resizes (reason, from, to, checkpoint step):", rs, flush=True)
    return fails


def main():
    if os.geteuid() != 0:
        skip("network namespaces cannot be created: not root")
    probe = f"olmo_probe_{os.getpid()}"
    p = sh(IP, "netns", "add", probe, check=False)
    if p.returncode != 0:
        skip(f"network namespaces cannot be created here (ip netns add: {p.stderr.strip()})")
    sh(IP, "netns", "del", probe, check=False)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))  # cleanup runs on ctest's timeout

    tmp = tempfile.mkdtemp(prefix="olmo_launch_netns_")
    hosts = Hosts()
    fails = []
    proc = None
    try:
        hosts.up()
        agent = os.path.join(tmp, "agent.sh")
        agent_script(agent, hosts)
        data = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 12 * (STEPS + 2))
        ref = os.path.join(tmp, "ref")
        ot.olmo("train", td.tiny_config(), *lu.overrides(data, ref, STEPS))

        run = os.path.join(tmp, "run")
        net = f"{hosts.net}.0/24"
        mpi = (f"{lu.MPI_ARGS} --mca btl tcp,self --mca btl_tcp_if_include {net} "
               f"--mca oob_tcp_if_include {net}")
        h1, h2 = hosts.ips
        args = ["--hosts", f"{h1}:2,{h2}:2", "--rsh-agent", agent, "--mpi-args", mpi,
                "--poll", "0.05", "--probe-interval", "0.2", "--max-failures", "5",
                td.tiny_config(), *lu.overrides(data, run, STEPS)]
        # The kills land at named points (OLMO_TEST_HOLD): rank 2 (host 2) holds inside step 6;
        # rank 2 again at the first checkpoint it writes from step 10 on (after the grow: rank 2
        # exists only while both hosts run), its shard written, the checkpoint not committed.
        hold_step, hold_ckpt = os.path.join(tmp, "hold.step"), os.path.join(tmp, "hold.ckpt")
        proc, log = lu.start(args, os.path.join(tmp, "launch.log"),
                             env={"OLMO_TEST_HOLD": f"step:2:6:{hold_step},ckpt:2:10+:{hold_ckpt}",
                                  **session_dir(tmp, "run")})

        def nev(name):
            return len(lu.events(run, name))

        def launched(n0, hosts_want):
            """A launch after the first n0 on exactly these hosts."""
            return any(e["hosts"] == hosts_want for e in lu.events(run, "launch")[n0:])

        try:
            at = lu.wait_file(hold_step, 180, proc).split()
            nf, nl = nev("failure"), nev("launch")
            t_kill = time.time()
            pids = hosts.kill_host(1)  # rank 2 holds inside step 6
            lu.wait_for(lambda: nev("failure") > nf, 60, "the failure", proc)
            down_s = lu.events(run, "failure")[nf]["time"] - t_kill
            print(f"host 2 ({h2}) lost inside step {at[2]} (rank 2 held at '{at[1]}'): "
                  f"{len(pids)} processes killed; job down {down_s:.2f} s later", flush=True)
            if at[1:] != ["step", "6"]:
                fails.append(f"the first hold point was {at}, not inside step 6")
            lu.wait_for(lambda: launched(nl, f"{h1}:2"), 60, "the relaunch on host 1", proc)
            lu.wait_for(lambda: lu.last_train_step(run) >= 9, 120, "step 9", proc)
            nl = nev("launch")
            hosts.back(1)
            lu.wait_for(lambda: launched(nl, f"{h1}:2,{h2}:2"), 120, "the grow", proc)
            print("host 2 back:", lu.events(run, "resize")[-1], flush=True)
            # Mid-checkpoint: rank 2 holds with its shard of step s written; kill host 1.
            at = lu.wait_file(hold_ckpt, 180, proc).split()
            s = int(at[2])
            nf = nev("failure")
            pids = hosts.kill_host(0)
            landed = (os.path.isdir(os.path.join(run, f"step{s}-tmp")) and
                      not os.path.exists(os.path.join(run, f"step{s}", "COMMITTED")))
            lu.wait_for(lambda: nev("failure") > nf, 60, "the 2nd failure", proc)
            committed = os.path.exists(os.path.join(run, f"step{s}", "COMMITTED"))
            print(f"host 1 ({h1}) lost while step{s} was being written (rank 2 held at "
                  f"'{at[1]} of step {s}'): {len(pids)} processes killed; step{s} committed: "
                  f"{committed}", flush=True)
            if at[1] != "ckpt" or not landed or committed:
                fails.append(f"the host-1 kill did not land inside the step-{s} checkpoint "
                             f"(hold {at}, step{s}-tmp there and uncommitted: {landed}, "
                             f"committed later: {committed})")
            proc.wait(timeout=300)
        finally:
            lu.stop(proc, log)
        out = open(os.path.join(tmp, "launch.log")).read()
        if os.environ.get("OLMO_LAUNCH_LOG"):  # a copy of the launcher's output (README)
            shutil.copy(os.path.join(tmp, "launch.log"), os.environ["OLMO_LAUNCH_LOG"])
        if proc.returncode != 0:
            fails.append(f"launcher exit {proc.returncode}:\n{out[-6000:]}")
        launches = [(e["world"], e["hosts"]) for e in lu.events(run, "launch")]
        want = [(4, f"{h1}:2,{h2}:2"), (2, f"{h1}:2"), (4, f"{h1}:2,{h2}:2"), (2, f"{h2}:2")]
        # A job that failed on its own (not one of the two host kills) is restarted on the same
        # hosts: allowed (the launcher's job), but shown with what mpirun said.
        dedup = [x for i, x in enumerate(launches) if i == 0 or x != launches[i - 1]]
        if dedup != want:
            fails.append(f"launches {launches}, expected {want}")
        own = [e for e in lu.events(run, "restart") if e["reason"] == "failure"]
        if own:
            print(f"note: {len(own)} job failure(s) besides the two host kills, restarted on the "
                  "same hosts; mpirun said:\n" + "\n".join(
                      x for x in out.splitlines() if not x.startswith(("olmo launch", "step "))
                  )[:3000], flush=True)
        rs = [(e["reason"], e["from"], e["to"], e["step"]) for e in lu.events(run, "resize")]
        if len(rs) == 3 and rs[2][3] != s - 2:
            fails.append(f"after the mid-checkpoint kill the run resumed from step {rs[2][3]}, "
                         f"not the checkpoint before step {s}")
        fails += lu.compare_with_reference(run, ref, STEPS)
        lat = [e["restart_latency_s"] for e in lu.events(run, "running") if "restart_latency_s" in e]
        print("resizes (reason, from, to, checkpoint step):", rs)
        print("restart latency (job down -> first step of the relaunched job):",
              ", ".join(f"{x:.2f} s" for x in lat), flush=True)
        for line in out.splitlines():
            if "unreachable" in line and "olmo launch: host" in line:
                print(line)
                break
        hosts.back(0)
        fails += cut_network(hosts, agent, mpi, data, tmp, lu.restart_seconds([run]))
    finally:
        hosts.down()
        shutil.rmtree(tmp, ignore_errors=True)
    left = [n for n in hosts.ns if n in sh(IP, "netns", "list", check=False).stdout]
    if left:
        fails.append(f"namespaces left behind: {left}")
    for f in fails:
        print("FAIL:", f)
    if fails:
        sys.exit(1)
    print("lost hosts mid-step and mid-checkpoint (at hold points): shrank, grew back, finished "
          "bitwise equal to the run that never lost a host; a cut link found by --stall-timeout, "
          "relaunched, finished bitwise equal: PASS")


if __name__ == "__main__":
    main()
