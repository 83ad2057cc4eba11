"""Rendezvous security (issue 37 item 5): olmo's own code accepts no network connection. The
only listeners of a multi-process run are Open MPI's (mpirun's out-of-band and PMIx server, and
the TCP BTL inside each rank's libmpi); docs/launch_security.md says which and how to fence them.
This test keeps that true: a future listener in our code must come with a per-job secret.
Two `olmo launch --np 2` runs of the same 60 steps; every 50 ms the listening TCP sockets and
bound UDP sockets of the machine (/proc/net/{tcp,tcp6,udp,udp6}) are matched to their owners
through /proc/PID/fd socket inodes:
1. with Open MPI's TCP BTL left out (--mca btl self,vader: ranks talk through shared memory),
   no process running our binary (the launcher, every rank; /proc/PID/exe is the pinned copy)
   owns any; the job's other processes are Open MPI's (exe orterun/orted/...) and are listed;
2. with the TCP BTL on and its ports pinned to a window (btl_tcp_port_{min,range}_v{4,6}), the
   ranks' listeners are all inside that window, so each is Open MPI's BTL and none is ours; a
   foreign client then connects to every listener of the job (ranks' and mpirun's) and sends
   junk: the job goes on and ends with per-step records equal to run 1's.
Env: OLMO_BIN, OLMO_MPIRUN. Exit 0 = pass.
"""
import os
import random
import socket
import sys
import time

import slurm_util as su  # test_main, pin_binary, the distributed helpers
from olmo_test import check
from olmo_test import tiny_data as td

OMPI_EXES = {"orterun", "mpirun", "mpiexec", "orted", "prte", "prted", "prterun"}
STEPS = 60
WINDOW = 8  # ports per BTL window


def sockets():
    """inode -> (proto, ip, port) of every listening TCP and bound UDP socket."""
    out = {}
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        try:
            lines = open(f"/proc/net/{proto}").read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if proto.startswith("tcp") and f[3] != "0A":  # 0A: LISTEN
                continue
            addr, port = f[1].rsplit(":", 1)
            ip = (socket.inet_ntop(socket.AF_INET, bytes.fromhex(addr)[::-1]) if len(addr) == 8 else
                  socket.inet_ntop(socket.AF_INET6, b"".join(bytes.fromhex(addr[i:i + 8])[::-1]
                                                             for i in range(0, 32, 8))))
            out[f[9]] = (proto, ip, int(port, 16))
    return out


def owners(root):
    """pid -> (exe, [(proto, ip, port)...]) for root and its descendants, and for every process
    running our binary (OLMO_BIN)."""
    ours = os.path.realpath(os.environ["OLMO_BIN"])
    socks = sockets()
    parent, exe = {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            parent[int(pid)] = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
            exe[int(pid)] = os.path.realpath(f"/proc/{pid}/exe")
        except OSError:
            continue

    def in_tree(p):
        while p > 1:
            if p == root:
                return True
            p = parent.get(p, 0)
        return False

    out = {}
    for pid in exe:
        if not (in_tree(pid) or exe[pid] == ours):
            continue
        found = []
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                t = os.readlink(f"/proc/{pid}/fd/{fd}")
                if t.startswith("socket:[") and t[8:-1] in socks:
                    found.append(socks[t[8:-1]])
        except OSError:
            continue
        out[pid] = (exe[pid], found)
    return out


def watch(lu, proc, log, run):
    """Polls owners() until the launcher ends: {(pid, exe): set of listeners} and the pids
    that ran our binary."""
    seen, ours = {}, set()
    me = os.path.realpath(os.environ["OLMO_BIN"])
    try:
        while proc.poll() is None:
            for pid, (exe, found) in owners(proc.pid).items():
                seen.setdefault((pid, exe), set()).update(found)
                if exe == me:
                    ours.add(pid)
            time.sleep(0.05)
    finally:
        lu.stop(proc, log)
    return seen, ours


def port_window(family):
    """A base port with WINDOW free ports after it (bound and released here)."""
    for _ in range(200):
        base = random.randrange(40000, 60000 - WINDOW)
        try:
            for p in range(base, base + WINDOW):
                with socket.socket(family, socket.SOCK_STREAM) as s:
                    s.bind(("::" if family == socket.AF_INET6 else "0.0.0.0", p))
            return base
        except OSError:
            continue
    raise AssertionError("no free port window")


def describe(seen):
    return "; ".join(f"{os.path.basename(exe)} pid {pid}: " +
                     ", ".join(f"{pr} {ip}:{port}" for pr, ip, port in sorted(ls))
                     for (pid, exe), ls in sorted(seen.items()) if ls) or "none"


def body(tmp, du, lu):
    me = os.path.realpath(os.environ["OLMO_BIN"])
    data = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 12 * 12)
    base = ["--np", "2", "--poll", "0.05"]

    # 1. no TCP BTL: nothing of ours listens
    run1 = os.path.join(tmp, "shm")
    proc, log = lu.start([*base, "--mpi-args", lu.MPI_ARGS + " --mca btl self,vader",
                          td.tiny_config(), *lu.overrides(data, run1, STEPS)],
                         os.path.join(tmp, "shm.log"))
    seen, ours = watch(lu, proc, log, run1)
    check(proc.returncode == 0, f"run 1: rc {proc.returncode}: {open(os.path.join(tmp, 'shm.log')).read()[-1500:]}")
    check(len(ours) >= 3, f"run 1: saw {len(ours)} processes of our binary (the launcher and 2 ranks)")
    mine = {k: v for k, v in seen.items() if k[1] == me and v}
    check(not mine, f"run 1: our binary listens (no TCP BTL): {describe(mine)}")
    other = {k: v for k, v in seen.items() if k[1] != me and v}
    strange = {k: v for k, v in other.items() if os.path.basename(k[1]) not in OMPI_EXES}
    check(not strange, f"run 1: a listener of the job that is not Open MPI's: {describe(strange)}")
    print(f"run 1 (btl self,vader): {len(ours)} processes of our binary, listeners: {describe(mine)}; "
          f"Open MPI's: {describe(other)}", flush=True)

    # 2. TCP BTL on, its ports pinned: every rank listener is in the window; junk from a
    # foreign client does not stop the job
    v4, v6 = port_window(socket.AF_INET), port_window(socket.AF_INET6)
    mca = (f" --mca btl_tcp_port_min_v4 {v4} --mca btl_tcp_port_range_v4 {WINDOW}"
           f" --mca btl_tcp_port_min_v6 {v6} --mca btl_tcp_port_range_v6 {WINDOW}")
    run2 = os.path.join(tmp, "tcp")
    proc, log = lu.start([*base, "--mpi-args", lu.MPI_ARGS + mca, td.tiny_config(),
                          *lu.overrides(data, run2, STEPS)], os.path.join(tmp, "tcp.log"))
    poked, refused, snap = [], [], {}
    try:
        lu.wait_for(lambda: lu.last_train_step(run2) >= 3, 120, "step 3", proc)
        snap = owners(proc.pid)
        for pid, (exe, found) in snap.items():
            for pr, ip, port in found:
                if not pr.startswith("tcp"):
                    continue
                for junk in (b"GET / HTTP/1.0\r\n\r\n", os.urandom(512)):
                    try:
                        with socket.create_connection(("::1" if pr == "tcp6" else "127.0.0.1", port),
                                                      timeout=1) as s:
                            s.sendall(junk)
                            s.settimeout(0.2)
                            try:
                                s.recv(64)
                            except OSError:
                                pass
                    except OSError as e:
                        refused.append(f"{port}: {e}")
                        continue
                poked.append(f"{os.path.basename(exe)}:{port}")
    except AssertionError as e:
        check(False, f"run 2: {e}")
    seen, ours = watch(lu, proc, log, run2)
    for pid, (exe, found) in snap.items():
        seen.setdefault((pid, exe), set()).update(found)
    out2 = open(os.path.join(tmp, "tcp.log")).read()
    check(proc.returncode == 0, f"run 2 (foreign clients): rc {proc.returncode}: {out2[-1500:]}")
    mine = {k: v for k, v in seen.items() if k[1] == me and v}
    inside = lambda pr, port: (v4 if pr in ("tcp", "udp") else v6) <= port < (v4 if pr in ("tcp", "udp") else v6) + WINDOW
    outside = {k: {x for x in v if not inside(x[0], x[2])} for k, v in mine.items()}
    outside = {k: v for k, v in outside.items() if v}
    check(mine and not outside, f"run 2: rank listeners outside Open MPI's BTL windows {v4}+{WINDOW} / "
          f"{v6}+{WINDOW}: {describe(outside) if mine else 'no listener seen at all'}")
    launcher = {k: v for k, v in mine.items() if k[0] == proc.pid}
    check(not launcher, f"run 2: the launcher listens: {describe(launcher)}")
    check(poked, f"run 2: no listener was connected to (refused: {refused})")
    same = lu.records(run2) == lu.records(run1) if proc.returncode == 0 else False
    check(same, "run 2: per-step records differ from run 1's")
    print(f"run 2 (btl tcp, windows {v4}+{WINDOW} v4 / {v6}+{WINDOW} v6): our binary's listeners "
          f"all Open MPI's BTL: {describe(mine)}; junk sent to {len(poked)} listeners "
          f"({', '.join(poked)}): the job finished, records equal to run 1's", flush=True)


if __name__ == "__main__":
    sys.exit(su.test_main("olmo_listen_", body, slurm=False))
