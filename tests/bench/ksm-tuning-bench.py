#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""ksm-tuning benchmark: ksmtuned2 against its peers, on this machine's real KSM, in one run.

Scenarios (../shared/DESIGN.md section 7, issue 5):
  S1 quiet victim: 2048 unique pages x 4 copies (32 MiB); merge time until its
     ksm_merging_pages reaches 8192 exactly.
  S2 contended: a separate contender (64 MiB of mergeable unique pages, a thread
     looping mmap/touch/munmap of 256 MiB) beside the S1 victim.
  S3 same process: the S1 victim region and a churn thread in one mm.
  (--churn-threads sets how many churn threads; see CHURN_THREADS.)
  S4 fleet: 6 processes x 256 MiB, 75% identical across them (49152 shared pages
     each, 16384 private); merge time until all 6 x 49152 pages are merging.
  S5 idle host: one process with 64 MiB of mergeable unique pages (ksmd has
     something to scan, nothing to gain); ksmd CPU, the daemon's CPU and RSS.

Variants of S1-S4 (issue 14), as "S1/start-late" in --scenarios or with
--variants (Q1/restart only by name: the daemon SIGKILLed 5 s after it
excluded the churning guest, and started again):
  start-late  the workloads are mergeable before the peer starts (ksmd off):
              a daemon started after its guests; timed from the peer's start
              (the daemon's exec)
  restart     the peer is SIGKILLed mid-merge (as soon as the victims' first
              pages merge, at most 2 s after they are ready) and started again
              on the same runtime directory (knob journal); the fixed peers
              have nothing to restart and run as in the plain scenario, the
              reference in the same run

Peers, each started from the same reset state (run=0, kernel defaults):
  off         run=0: the contender's reference (S2, S3 only)
  defaults    run=1 at the kernel defaults, 100 pages / 20 ms
  aggressive  run=1, pages_to_scan=100000, sleep_millisecs=0
  advisor     run=1, advisor_mode=scan-time with its default knobs
  ksmtuned    the classic ksmtuned algorithm, from its documentation (see
              ClassicKsmtuned)
  ksmtuned2   build/src/daemon/ksmtuned2 with a bench configuration in a temp dir

Safety: KSM is global. Every scenario runs under the KSM test lock
(tests/lib/ksm-guard.sh's lock file), every knob is saved first and put back
on every exit path (Ctrl-C, SIGTERM from meson's timeout, failure), every
process started here is killed. The lock is held for one run (one peer, one
repeat) and released between runs: each run starts from its own checked
clean state and measures only within itself, so another test running in
between cannot skew it.

Only the Python standard library: CI runs Debian's python3."""

import argparse
import ctypes
import json
import os
import re
import resource
import select
import shutil
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import fcntl

KSM = "/sys/kernel/mm/ksm"
PAGE = os.sysconf("SC_PAGE_SIZE")
GIB = 1 << 30
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("SOURCE_ROOT", os.path.dirname(os.path.dirname(HERE)))


class Interrupted(Exception):
    pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def read_str(path):
    with open(path) as f:
        return f.read().strip()


def read_int(path):
    return int(read_str(path))


def ksm_read(name):
    v = read_str(f"{KSM}/{name}")
    m = re.search(r"\[([^\]]*)\]", v)  # advisor_mode reads "[none] scan-time"
    return m.group(1) if m else v


def ksm_write(name, value):
    with open(f"{KSM}/{name}", "w") as f:
        f.write(str(value))


def ksm_counters():
    names = ("pages_scanned", "pages_shared", "pages_sharing", "pages_unshared", "pages_volatile",
             "full_scans", "general_profit", "ksm_zero_pages")
    out = {}
    for n in names:
        try:
            out[n] = int(ksm_read(n))
        except (OSError, ValueError):
            out[n] = 0
    return out


def meminfo_kib():
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":", 1)
            out[k] = int(v.split()[0])
    return out


# --------------------------------------------------------------------------- guard

def guard_knob_list():
    """The knob list of tests/lib/ksm-guard.sh, in its restore order, so the
    benchmark saves exactly what the kernel tests save."""
    path = os.path.join(SOURCE_ROOT, "tests", "lib", "ksm-guard.sh")
    with open(path) as f:
        m = re.search(r'^KSM_GUARD_KNOBS="([^"]*)"', f.read(), re.M)
    if not m:
        raise RuntimeError(f"{path}: no KSM_GUARD_KNOBS line")
    return m.group(1).split()


class Guard:
    """The ksm-guard contract in Python: the same lock file, the same knobs,
    restored with advisor_mode off first (it makes pages_to_scan refuse
    writes) and run last."""

    def __init__(self):
        self.knobs = guard_knob_list()
        self.lock_path = os.environ.get("KSMTUNED2_TEST_LOCK", "/run/ksmtuned2-ksm-tests.lock")
        self.fd = None
        self.saved = {}
        self.children = []  # Popen objects killed at restore
        self.last_restored = None

    def acquire(self):
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                log(f"waiting for the KSM test lock {self.lock_path} ...")
                fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            # Interrupted while waiting: we never held it, so touch nothing.
            os.close(fd)
            raise
        self.fd = fd
        self.saved = {}
        for k in self.knobs:
            try:
                self.saved[k] = ksm_read(k)
            except OSError:
                pass
        # A crashed test that wrote run=2 must not make us save it as "original".
        if self.saved.get("run") == "2":
            self.saved["run"] = "0"

    def track(self, proc):
        self.children.append(proc)

    def untrack(self, proc):
        if proc in self.children:
            self.children.remove(proc)

    def kill_children(self):
        for p in self.children:
            try:
                p.kill()
            except OSError:
                pass
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.children = []

    def restore(self):
        self.kill_children()
        if self.fd is None:
            return
        try:
            ksm_write("advisor_mode", "none")
            settle_stale(set())
        except OSError:
            pass
        for k in self.knobs:
            if k not in self.saved:
                continue
            try:
                if ksm_read(k) != self.saved[k]:
                    ksm_write(k, self.saved[k])
            except OSError as e:
                log(f"warning: cannot restore {k}={self.saved[k]}: {e}")

    def release(self):
        self.restore()
        if self.fd is not None:
            # Read back while still holding the lock: once released, another
            # test may legitimately set run=1.
            self.last_restored = {k: ksm_read(k) for k in ("run", "pages_to_scan", "sleep_millisecs",
                                                           "advisor_mode")}
            os.close(self.fd)
            self.fd = None


# --------------------------------------------------------------------------- ksmd

def find_ksmd():
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = read_str(f"/proc/{d}/stat")
        except OSError:
            continue
        comm = stat[stat.find("(") + 1:stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2:].split()
        if comm == "ksmd" and fields[1] == "2":  # a kernel thread: parent kthreadd
            return int(d)
    raise RuntimeError("no ksmd kernel thread found")


def task_cpu_ns(pid):
    """On-CPU time from schedstat (ns), finer than stat's clock ticks."""
    return int(read_str(f"/proc/{pid}/schedstat").split()[0])


def task_runq_wait_ns(pid):
    """Time runnable but waiting for a CPU (schedstat's second field). ksmd
    runs at nice 5: beside other engineers' builds on this 2-CPU machine it
    gets a third of a busy CPU, which is why the aggressive peer's CPU-seconds
    vary from run to run; this shows how much."""
    return int(read_str(f"/proc/{pid}/schedstat").split()[1])


def process_schedstat_ns(pid, field):
    """Sum over the live threads of a process: field 0 on-CPU, 1 run-queue wait."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(read_str(f"/proc/{pid}/task/{t}/schedstat").split()[field])
        except OSError:
            pass
    return total


def process_cpu_ns(pid):
    return process_schedstat_ns(pid, 0)


def process_stat_cpu_s(pid):
    """utime + stime of /proc/PID/stat (fields 14, 15; all threads), s."""
    fields = read_str(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def other_processes_with_ksm_pages(own):
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in own:
            continue
        try:
            if int(read_str(f"/proc/{d}/ksm_merging_pages")) > 0:
                found.append(int(d))
        except (OSError, ValueError):
            pass
    return found


class Sampler(threading.Thread):
    """~100 Hz: ksmd's state and wchan (blocked fraction), the victims' summed
    ksm_merging_pages (exact merge time), and every 0.5 s pages_sharing
    (savings over time). /proc/PID/ksm_merging_pages reads a counter in the
    mm and takes no mmap_lock, so it never stalls behind the churn threads."""

    def __init__(self, ksmd, victims, expected, period=0.01):
        super().__init__(daemon=True)
        self.ksmd = ksmd
        self.victims = victims
        self.expected = expected
        self.period = period
        self.stop_ev = threading.Event()
        self.t_start = None
        self.t_ready = None  # set by the runner when every victim is ready
        self.merged_at = None
        self.merging = 0
        self.samples = 0
        self.d_lock = 0   # D with wchan ksm_scan_thread: the inlined mmap_lock wait (6.18)
        self.d_other = 0  # other D, e.g. __flush_work from lru_add_drain_all
        self.running = 0
        self.series = []  # (t - t_start, pages_sharing)
        self.base_sharing = 0
        # Every 0.5 s too: (t - t_start, ksmd CPU-seconds so far, the
        # daemon's controller phase or None), for ksmd's CPU per phase.
        self.metrics_path = None  # the daemon's metrics file, when it has one
        self.cpu_series = []
        self.cpu0_ns = None

    def run(self):
        stat_path = f"/proc/{self.ksmd}/stat"
        wchan_path = f"/proc/{self.ksmd}/wchan"
        next_series = 0.0
        while not self.stop_ev.is_set():
            now = time.monotonic()
            try:
                st = read_str(stat_path)
                state = st[st.rfind(")") + 2]
                self.samples += 1
                if state == "D":
                    if read_str(wchan_path) == "ksm_scan_thread":
                        self.d_lock += 1
                    else:
                        self.d_other += 1
                elif state == "R":
                    self.running += 1
            except OSError:
                pass
            if self.victims and self.merged_at is None:
                total = 0
                for pid in self.victims:
                    try:
                        total += read_int(f"/proc/{pid}/ksm_merging_pages")
                    except (OSError, ValueError):
                        pass
                self.merging = total
                if self.expected and total >= self.expected and self.t_ready is not None:
                    self.merged_at = now
            if now - self.t_start >= next_series:
                try:
                    self.series.append((round(now - self.t_start, 2),
                                        int(ksm_read("pages_sharing")) - self.base_sharing))
                except (OSError, ValueError):
                    pass
                try:
                    cpu = task_cpu_ns(self.ksmd)
                    if self.cpu0_ns is None:
                        self.cpu0_ns = cpu
                    self.cpu_series.append((round(now - self.t_start, 2), round((cpu - self.cpu0_ns) / 1e9, 4),
                                            daemon_phase(self.metrics_path)))
                except OSError:
                    pass
                next_series += 0.5
            self.stop_ev.wait(self.period)

    def stop(self):
        self.stop_ev.set()
        self.join()


def daemon_phase(metrics_path):
    """The controller's phase (maintain, burst, decay, idle) from the
    daemon's metrics file, which it rewrites every tick; None without one
    (the fixed peers) or before its first write."""
    if not metrics_path:
        return None
    try:
        with open(metrics_path) as f:
            for line in f:
                m = re.match(r'ksmtuned2_controller_phase\{phase="([a-z]+)"\} 1\b', line)
                if m:
                    return m.group(1)
    except OSError:
        pass
    return None


def cpu_at(cpu_series, t):
    """ksmd CPU-seconds of the (t, cpu_s, phase) series at the first sample
    at or after t (0.5 s steps), the last one if none."""
    for ts, c, _ in cpu_series:
        if ts >= t:
            return c
    return cpu_series[-1][1] if cpu_series else None


def cpu_by_phase(cpu_series, t_from=0.0):
    """{phase: [ksmd CPU-seconds, seconds]} from a (t, cpu_s, phase) series,
    each interval counted for the phase seen at its start, from t_from on
    ("-": no phase, a fixed peer or before the daemon's first tick)."""
    out = {}
    for (t0, c0, ph), (t1, c1, _) in zip(cpu_series, cpu_series[1:]):
        if t0 >= t_from:
            acc = out.setdefault(ph or "-", [0.0, 0.0])
            acc[0] += c1 - c0
            acc[1] += t1 - t0
    return out


# --------------------------------------------------------------------------- workloads

class Workload:
    """tests/helpers/ksm-workload: prints "ready PID ADDR", exits on stdin EOF,
    so it also goes away if this harness dies."""

    def __init__(self, guard, binary, args, name, oom_first=False):
        self.name = name
        args = [a for x in args for a in (churn_args() if x == "+churn" else [x])]
        # oom_first: the OOM killer's first choice from before it maps
        # anything (choom, util-linux), so a big scenario that meets someone
        # else's memory loses its own workload, not their work.
        wrap = ["choom", "-n", "1000", "--"] if oom_first else []
        self.proc = subprocess.Popen(wrap + [binary] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     bufsize=0)
        guard.track(self.proc)
        self.guard = guard
        line = self._readline(60)
        m = re.match(r"ready (\d+) ", line or "")
        if not m:
            self.stop()
            raise RuntimeError(f"workload {name} ({' '.join(args)}) did not get ready: {line!r}")
        self.pid = int(m.group(1))

    def _readline(self, timeout):
        buf = b""
        deadline = time.monotonic() + timeout
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.proc.stdout], [], [], left)
            if not r:
                return None
            c = os.read(self.proc.stdout.fileno(), 1)
            if not c:
                return None
            buf += c
        return buf.decode().strip()

    def command(self, cmd, want_reply=False):
        self.proc.stdin.write((cmd + "\n").encode())
        self.proc.stdin.flush()
        if want_reply:
            return self._readline(30)
        return None

    def churn_stats(self):
        line = self.command("stats", want_reply=True)
        if not line or not line.startswith("stats "):
            raise RuntimeError(f"workload {self.name}: bad stats reply {line!r}")
        kv = dict(x.split("=") for x in line.split()[1:])
        ops = int(kv["ops"])
        secs = int(kv["elapsed_usec"]) / 1e6
        return {"ops_per_s": ops / secs if secs > 0 else 0.0, "p99_us": float(kv["p99_usec"]),
                "p50_us": float(kv["p50_usec"]), "ops": ops}

    def stop(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.guard.untrack(self.proc)


# --------------------------------------------------------------------------- peers

class Peer:
    name = "?"
    scenarios = ("S1", "S2", "S3", "S4", "S5", "Q1")
    # Peers that only give a reference figure run once unless --repeat-all:
    # their merge times are far from any target's bound, and repeating them
    # would cost more than half of a full run.
    repeated = True

    def start(self, ctx):
        pass

    def stop(self):
        pass

    def own_pids(self):
        return []

    def metrics_path(self):
        return None

    def check_alive(self):
        """Raises RuntimeError when the peer died during the run."""

    def restart(self, ctx):
        """SIGKILL and start again (the restart variant); a fixed setting has
        nothing to restart."""


class Off(Peer):
    """run=0 for the whole run. Every S2/S3 run measures its own KSM-off
    reference first; this peer's ratio against its own reference is the
    noise floor of those ratios."""
    name = "off"
    scenarios = ("S2", "S3")
    repeated = False


class Fixed(Peer):
    def __init__(self, name, pages, sleep_ms, scenarios=Peer.scenarios + ("S6",)):
        self.name = name
        self.pages = pages
        self.sleep_ms = sleep_ms
        self.scenarios = scenarios

    def start(self, ctx):
        ksm_write("pages_to_scan", self.pages)
        ksm_write("sleep_millisecs", self.sleep_ms)
        ksm_write("run", 1)


class Advisor(Peer):
    name = "advisor"
    repeated = False

    def start(self, ctx):
        # At its own defaults: reset_ksm() wrote them.
        ksm_write("advisor_mode", "scan-time")
        ksm_write("run", 1)


class ClassicKsmtuned(Peer):
    """The classic ksmtuned algorithm, from its documented behaviour (the shipped
    ksmtuned.conf and the RHEL 6 Virtualization Tuning and Optimization
    Guide, 8.4.2 "The KSM Tuning Service"), not from its code:
      - every KSM_MONITOR_INTERVAL=60 s it looks at free memory; thres is
        KSM_THRES_COEF=20 % of MemTotal, at least KSM_THRES_CONST=2048 KiB;
      - KSM is stopped (run=0) while free memory is above thres and the memory
        committed to qemu processes plus thres stays below MemTotal;
      - otherwise KSM runs and npages moves by KSM_NPAGES_BOOST=+300 when free
        memory is below thres, by KSM_NPAGES_DECAY=-50 otherwise, within
        [KSM_NPAGES_MIN=64, KSM_NPAGES_MAX=1250], starting from 0;
      - sleep_millisecs is KSM_SLEEP_MSEC=10 scaled to a 16 GiB server
        (10 * 16 GiB / MemTotal), at least 10.
    "Free" is MemFree + Buffers + Cached, as ksmtuned counts it; committed is
    the VSZ of qemu processes (none in this benchmark). libvirt's retune
    notification on guest start is not sent: the workloads are not guests."""
    name = "ksmtuned"
    interval_s = 60
    repeated = False

    def start(self, ctx):
        self.stop_ev = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.decisions = []
        self.thread.start()

    def _committed_kib(self):
        total = 0
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                comm = read_str(f"/proc/{d}/comm")
                if comm == "qemu-kvm" or comm.startswith("qemu-system"):
                    for line in open(f"/proc/{d}/status"):
                        if line.startswith("VmSize:"):
                            total += int(line.split()[1])
            except OSError:
                pass
        return total

    def _loop(self):
        mi = meminfo_kib()
        total = mi["MemTotal"]
        thres = max(total * 20 // 100, 2048)
        sleep_ms = max(10 * 16 * 1024 * 1024 // total, 10)
        npages = 0
        while True:
            mi = meminfo_kib()
            free = mi.get("MemFree", 0) + mi.get("Buffers", 0) + mi.get("Cached", 0)
            committed = self._committed_kib()
            try:
                if committed + thres < total and free > thres:
                    ksm_write("run", 0)
                    self.decisions.append(f"stop (free {free * 100 // total}% > 20%)")
                else:
                    npages += 300 if free < thres else -50
                    npages = min(max(npages, 64), 1250)
                    ksm_write("pages_to_scan", npages)
                    ksm_write("sleep_millisecs", sleep_ms)
                    ksm_write("run", 1)
                    self.decisions.append(f"run npages={npages} sleep={sleep_ms}")
            except OSError as e:
                log(f"ksmtuned peer: {e}")
            if self.stop_ev.wait(self.interval_s):
                return

    def stop(self):
        self.stop_ev.set()
        self.thread.join()


def die_with_parent():
    """In the daemon's child before exec: SIGTERM when the harness dies, even
    by SIGKILL, so the daemon restores its knobs instead of leaving ksmd at
    whatever rate it chose. Safe in preexec_fn: no other thread of the
    harness runs while a peer starts (the sampler starts after)."""
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_PDEATHSIG = 1
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


BENCH_POLICY = """# the benchmark's workloads (tests/helpers/ksm-workload)
[Match]
Comm=ksm-workload
[Merge]
Mode=auto
Method=any
"""
# --policy-min-age: MinAge= appended to BENCH_POLICY ("" for none). Still
# 1h although exclusions stick now (Process.excluded): tried without it
# (issue 14, 6.18), the S2 contender's exclusion held, but the daemon's
# verdict "merge" switched on every workload's whole mm (method inject,
# PR_SET_MEMORY_MERGE), so S4's six fleet processes merged 6 pages beyond
# their regions (294918 of 294912) and the run was refused for its shape.
POLICY_MIN_AGE = "1h"


class Ksmtuned2(Peer):
    """The daemon with a bench configuration: its own RuntimeDirectory and
    PolicyDirectories in a temp dir, holding one policy (BENCH_POLICY) for
    the bench's workloads only, which mark their own memory: Mode=auto lets
    the daemon exclude a contender, as an administrator's policy for a
    service would; MinAge longer than any run means it never switches
    merging on for anything here. Every other process on the host is left
    alone. Extra configuration (e.g. controller keys being tuned) is
    appended from --ksmtuned2-conf."""
    name = "ksmtuned2"
    scenarios = Peer.scenarios + ("Q2", "S6")
    own_conf = ""

    def __init__(self, binary, extra_conf, extra_args, outdir):
        self.binary = binary
        self.extra_conf = extra_conf
        self.extra_args = extra_args
        self.outdir = outdir
        self.proc = None
        self.count = 0
        self.killed_cpu_ns = 0  # CPU of instances SIGKILLed in this run

    def start(self, ctx):
        self.count += 1
        self.killed_cpu_ns = 0
        self.dir = tempfile.mkdtemp(prefix="ksmtuned2-bench-")
        os.makedirs(f"{self.dir}/run")
        os.makedirs(f"{self.dir}/policy.d")
        with open(f"{self.dir}/policy.d/50-bench.policy", "w") as f:
            f.write(ctx.get("policy", BENCH_POLICY + (f"MinAge={POLICY_MIN_AGE}\n" if POLICY_MIN_AGE else "")))
        conf = f"{self.dir}/ksmtuned2.conf"
        with open(conf, "w") as f:
            f.write("[Daemon]\n")
            f.write(f"RuntimeDirectory={self.dir}/run\n")
            f.write(f"PolicyDirectories={self.dir}/policy.d\n")
            f.write(self.own_conf + ctx.get("conf", ""))
            # The controller's phase for the sampler (daemon_phase()).
            f.write(f"\n[Metrics]\nTextfilePath={self.dir}/metrics.prom\n")
            if self.extra_conf:
                f.write("\n" + open(self.extra_conf).read())
        self.conf = conf
        self.logpath = os.path.join(self.outdir, f"{self.name}-{ctx['scenario'].replace('/', '-')}-{ctx['repeat']}.log")
        self._spawn(ctx, "w")

    def restart(self, ctx):
        """SIGKILL, as systemd's Restart=on-failure would find it after a
        crash: no restore, the knobs stay where it left them, the journal in
        the runtime directory stays; then the same command again."""
        try:
            self.killed_cpu_ns += process_cpu_ns(self.proc.pid)
        except OSError:
            pass
        self.proc.kill()
        self.proc.wait()
        ctx["guard"].untrack(self.proc)
        with open(self.logpath, "a") as f:
            f.write("--- SIGKILL, restart\n")
        self._spawn(ctx, "a")

    def _spawn(self, ctx, mode):
        conf = self.conf
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify_path = f"{self.dir}/notify"
        if os.path.exists(notify_path):
            os.unlink(notify_path)
        notify.bind(notify_path)
        env = dict(os.environ, NOTIFY_SOCKET=notify_path)
        logf = open(self.logpath, mode)
        self.proc = subprocess.Popen([self.binary, "--config", conf] + self.extra_args, stdin=subprocess.DEVNULL,
                                     stdout=logf, stderr=subprocess.STDOUT, env=env, preexec_fn=die_with_parent)
        ctx["guard"].track(self.proc)
        logf.close()
        deadline = time.monotonic() + 15
        ready = False
        while time.monotonic() < deadline and not ready:
            r, _, _ = select.select([notify], [], [], 0.2)
            if r:
                msg = notify.recv(4096).decode(errors="replace")
                ready = "READY=1" in msg.split("\n")
            if self.proc.poll() is not None:
                break
        notify.close()
        if not ready:
            rc = self.proc.poll()
            self.stop()
            raise RuntimeError(f"ksmtuned2 did not report READY=1 (exit status {rc}); log: {self.logpath}")

    def own_pids(self):
        return [self.proc.pid] if self.proc else []

    def metrics_path(self):
        return f"{self.dir}/metrics.prom" if self.proc else None

    def cpu_budget_pct(self):
        """CpuBudget= as this daemon runs with it: from --ksmtuned2-conf, else
        the default the shipped conf/ksmtuned2.conf documents."""
        for path in (self.extra_conf, os.path.join(SOURCE_ROOT, "conf", "ksmtuned2.conf")):
            if not path:
                continue
            with open(path) as f:
                m = re.search(r"^#?CpuBudget=([0-9.]+)\s*$", f.read(), re.M)
            if m:
                return float(m.group(1))
        raise RuntimeError("no CpuBudget= in the configuration or in conf/ksmtuned2.conf")

    def check_alive(self):
        if self.proc and self.proc.poll() is not None:
            raise RuntimeError(f"ksmtuned2 exited during the run with status {self.proc.returncode}; "
                               f"log: {self.logpath}")

    def stop(self):
        if not self.proc:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                log(f"ksmtuned2 ignored SIGTERM for 15 s, killing it (log: {self.logpath})")
                self.proc.kill()
                self.proc.wait()
        if self.proc.returncode not in (0, None):
            log(f"warning: ksmtuned2 exited with status {self.proc.returncode} (log: {self.logpath})")
        self.proc = None
        subprocess.run(["rm", "-rf", self.dir])


class Ksmtuned2Observe(Ksmtuned2):
    """Q2: the daemon in Mode=observe (it samples, traces and decides, and
    writes nothing) beside ksmd at the kernel defaults, which this peer
    writes as the defaults peer does: the same ksmd rate as that peer, so
    what the guests pay beyond it is the daemon's own doing. own_conf adds
    keys that switch one of its readers off, to measure each alone."""
    scenarios = ("Q2",)

    def __init__(self, name, own_conf, *a):
        super().__init__(*a)
        self.name = name
        self.own_conf = "Mode=observe\n" + own_conf

    def start(self, ctx):
        Fixed("defaults", 100, 20).start(ctx)
        super().start(ctx)


# Q2's daemon peers: name -> configuration after Mode=observe
OBSERVE_PEERS = {
    "ksmtuned2-observe": "",
    "ksmtuned2-observe-notrace": "[Tuning]\nTracepoints=no\n",
}


# --------------------------------------------------------------------------- scenarios

VICTIM = ["--unique", "2048", "--copies", "4"]
# One churn thread by default (--churn-threads). Two, the mailing-list
# shape, measure mostly each other on this 2-CPU VM: with KSM off, two
# unpinned threads made 16-20k mmap+munmap/s with a p99 of 650-710 us, one
# thread 104k/s with 15 us, and two pinned to one CPU 100-108k/s with 15 us
# (munmap's TLB shootdown and the mmap_lock bounce between the two CPUs).
# With ksmd at the aggressive setting, the two unpinned threads even got
# faster (ksmd took a CPU and they shared the other), while the single
# thread fell to 7-9k/s with a p99 of 390-460 us: the single thread is what
# shows what ksmd costs a process that churns its address space.
CHURN_THREADS = 1
CHURN_MIB = 256


def set_churn_threads(n):
    global CHURN_THREADS
    CHURN_THREADS = max(1, n)


VARIANTS = ("start-late", "restart")


def base_scenario(name):
    """"S1/start-late" -> "S1"."""
    return name.split("/", 1)[0]


def scenario_variant(name):
    """"S1/start-late" -> "start-late", "S1" -> None."""
    return name.split("/", 1)[1] if "/" in name else None


def scenario_title(name):
    n = CHURN_THREADS
    title = SCENARIOS[base_scenario(name)]["title"].format(threads="1 churn thread" if n == 1 else f"{n} churn threads")
    v = scenario_variant(name)
    return f"{title}, {v}" if v else title


def churn_args():
    return ["--churn-threads", str(CHURN_THREADS), "--churn-mib", str(CHURN_MIB)]
SCENARIOS = {
    "S1": {"title": "S1 quiet victim (2048 unique pages x 4)",
           "victims": [VICTIM + ["--seed", "11"]], "expected": 8192},
    "S2": {"title": "S2 contended (separate contender: 64 MiB unique, {threads} mmap/munmap 256 MiB)",
           "contender": ["--unique", "16384", "--copies", "1", "--seed", "21", "+churn"],
           "victims": [VICTIM + ["--seed", "12"]], "expected": 8192},
    "S3": {"title": "S3 same process (victim region + {threads} in one mm)",
           "victims": [VICTIM + ["--seed", "13", "+churn"]], "expected": 8192, "churn_in_victim": True},
    "S4": {"title": "S4 fleet (6 x 256 MiB, 75% identical across them)",
           "victims": [["--unique", "49152", "--copies", "1", "--private", "16384", "--seed", "14"]] * 6,
           "expected": 6 * 49152},
    "S5": {"title": "S5 idle host (64 MiB mergeable unique pages: nothing to merge)",
           "victims": [["--unique", "16384", "--copies", "1", "--seed", "15"]], "expected": None},
    # Issue 14 item 4: near this 24 GiB machine's limit, S4's shape (75%
    # identical) at 16 GiB, so the two give a scaling figure. Its own tail
    # (60 s, the target's window) and timeouts: the aggressive setting needs
    # ~2 full scans of 4 Mi pages, tens of seconds of a core; the kernel
    # defaults scan ~20 MiB/s and would need ~27 min for two scans, so they
    # get 150 s and are reported as timed out (--timeout overrides both).
    # That keeps S6 with its three peers near 10 min. It needs MemAvailable
    # for all of it plus "reserve" (waited for up to MEMORY_WAIT_S before
    # the run takes the lock, then refused with a SKIP), and its workloads
    # are the OOM killer's first choice (oom_score_adj 1000).
    "S6": {"title": "S6 host size (32 x 512 MiB, 75% identical across them)",
           "victims": [["--unique", "98304", "--copies", "1", "--private", "32768", "--seed", "16"]] * 32,
           "expected": 32 * 98304, "tail": 60.0, "timeout": 300.0,
           "peer_timeout": {"defaults": 150.0, "advisor": 150.0, "ksmtuned": 150.0},
           "reserve_bytes": 2 * GIB, "oom_first": True, "sample_period": 0.05},
    "Q1": {"title": "Q1 QEMU tenants (5 TCG guests x 256 MiB: 3 before the peer, one mem-merge=off, one "
                    "-sandbox on; 2 after, one whose QEMU churns its own address space)", "expected": None, "tenants": True},
    "Q2": {"title": "Q2 guest cost (4 TCG guests x 256 MiB booting while the peer runs, 2 managed, 2 not)",
           "expected": None, "tenants": True},
}


class Skipped(Exception):
    """A run that cannot be made here (not enough memory): SKIP, not a failure."""


def workload_bytes(vargs):
    """The memory one ksm-workload maps: (unique * copies + private) pages."""
    opt = {"--unique": 0, "--copies": 1, "--private": 0}
    for k, v in zip(vargs, vargs[1:]):
        if k in opt:
            opt[k] = int(v)
    return (opt["--unique"] * opt["--copies"] + opt["--private"]) * PAGE


def scenario_bytes(scn):
    return sum(workload_bytes(v) for v in scn.get("victims", []))


def run_timeout(args, scn, peer_name):
    """--timeout when given, else the scenario's own for this peer, else 120 s."""
    if args.timeout_given:
        return args.timeout
    return scn.get("peer_timeout", {}).get(peer_name, scn.get("timeout", args.timeout))


def run_tail(args, scn):
    return args.tail if args.tail_given else scn.get("tail", args.tail)


# How long a run waits, before it takes the KSM lock, for MemAvailable to
# cover its scenario: other engineers' guests come and go on this machine.
MEMORY_WAIT_S = 180


def wait_for_memory(scn, what, timeout=MEMORY_WAIT_S):
    """Polls check_memory() for up to timeout seconds; the last Skipped
    propagates."""
    deadline = time.monotonic() + timeout
    logged = False
    while True:
        try:
            return check_memory(scn, scenario_bytes(scn), what)
        except Skipped as e:
            if time.monotonic() >= deadline:
                raise
            if not logged:
                log(f"{e}; waiting up to {timeout:.0f} s for memory")
                logged = True
            time.sleep(2)


def check_memory(scn, still_to_map, what):
    """Raises Skipped unless MemAvailable covers what the scenario still
    maps plus its reserve (other engineers' builds and guests share the
    machine; the OOM killer must not have to choose)."""
    if "reserve_bytes" not in scn:
        return
    avail = meminfo_kib()["MemAvailable"] * 1024
    need = still_to_map + scn["reserve_bytes"]
    if avail < need:
        raise Skipped(f"{what}: MemAvailable {avail / GIB:.1f} GiB (/proc/meminfo) < {need / GIB:.1f} GiB "
                      f"({still_to_map / GIB:.1f} GiB still to map + {scn['reserve_bytes'] / GIB:.0f} GiB reserve)")


ADVISOR_DEFAULTS = {"advisor_max_cpu": "70", "advisor_min_pages_to_scan": "500",
                    "advisor_max_pages_to_scan": "30000", "advisor_target_scan_time": "200"}


def reset_ksm(guard, own_pids):
    """Back to the state every peer starts from: run=0, kernel defaults, the
    advisor off with the knobs saved at the lock, no stale KSM pages."""
    ksm_write("advisor_mode", "none")
    ksm_write("run", 0)
    # The advisor peer runs at the kernel's own advisor defaults (mm/ksm.c,
    # 6.18), whatever an earlier test left; the guard puts the saved values
    # back at release.
    for k, v in ADVISOR_DEFAULTS.items():
        if os.path.exists(f"{KSM}/{k}") and ksm_read(k) != v:
            ksm_write(k, v)
    ksm_write("pages_to_scan", 100)
    ksm_write("sleep_millisecs", 20)

    settle_stale(own_pids)


def settle_stale(own_pids):
    """A workload that exited while run=0 leaves its rmap items, and the
    counters, behind until ksmd next visits its mm slot (seen on 6.18:
    pages_shared 2048 / sharing 6144 with no process left having KSM pages);
    the next peer's pages_sharing delta would be off by them, and while
    pages_shared > 0 the kernel refuses max_page_sharing and
    merge_across_nodes with EBUSY. Let ksmd at the kernel defaults walk until
    they are gone; never run=2, which would unmerge every process on the host
    and is not needed here. Skipped (deltas still work) when some other
    process has KSM pages: then the pages may not all be ours."""
    c = ksm_counters()
    stale = c["pages_shared"] or c["pages_sharing"] or c["pages_unshared"] or c["general_profit"] < 0
    if not stale:
        return
    others = other_processes_with_ksm_pages(own_pids)
    if others:
        log(f"note: processes {others[:5]} have KSM pages; counters are used as deltas")
        return
    saved = {k: ksm_read(k) for k in ("run", "pages_to_scan", "sleep_millisecs")}
    ksm_write("pages_to_scan", 100)
    ksm_write("sleep_millisecs", 20)
    # ksmd drops an exited mm's rmap items when its cursor reaches the slot;
    # with no live mergeable mm left it then goes to sleep without counting
    # a full scan, so wait for the counters, not for full_scans.
    ksm_write("run", 1)
    deadline = time.monotonic() + 15
    try:
        while time.monotonic() < deadline:
            time.sleep(0.05)
            c = ksm_counters()
            if not (c["pages_shared"] or c["pages_sharing"] or c["pages_unshared"]) and c["general_profit"] >= 0:
                return
        log(f"warning: KSM counters not back to zero after cleanup: {c}")
    finally:
        ksm_write("run", 0 if saved["run"] == "2" else saved["run"])
        ksm_write("pages_to_scan", saved["pages_to_scan"])
        ksm_write("sleep_millisecs", saved["sleep_millisecs"])


def measure_reference(w, secs):
    time.sleep(0.5)  # past the threads' start, or the peer's last scan
    w.command("reset")
    time.sleep(secs)
    return w.churn_stats()


def combine_references(before, after):
    """Throughput over both windows; p99 as the mean of the two (the
    workload reports quantiles, not its histogram)."""
    return {"ops_per_s": (before["ops_per_s"] + after["ops_per_s"]) / 2,
            "p99_us": (before["p99_us"] + after["p99_us"]) / 2,
            "before": before, "after": after}


def run_once(args, guard, scn_name, peer, repeat, ksmd):
    if SCENARIOS[base_scenario(scn_name)].get("tenants"):
        return run_tenants(args, guard, scn_name, peer, repeat, ksmd)
    scn = SCENARIOS[base_scenario(scn_name)]
    variant = scenario_variant(scn_name)
    late = variant == "start-late"
    timeout = run_timeout(args, scn, peer.name)
    tail = run_tail(args, scn)
    result = {"scenario": scn_name, "peer": peer.name, "repeat": repeat, "loadavg_1min": os.getloadavg()[0],
              "timeout_s": timeout, "tail_s": tail, "mergeable_bytes": scenario_bytes(scn)}
    check_memory(scn, scenario_bytes(scn), f"{scn_name} {peer.name}")
    ctx = {"guard": guard, "scenario": scn_name, "repeat": repeat}
    workloads = []
    sampler = None
    watch = None
    try:
        reset_ksm(guard, set(peer.own_pids()))
        contender = None
        ref = None
        # The contender's reference, paired with this run: the same churn
        # with KSM off (run=0), measured just before the peer starts. On
        # this shared 2-CPU machine the churn threads compete with other
        # engineers' builds, and a run=0 peer measured minutes apart showed
        # 1.5x the throughput and a quarter of the p99 of the "off" peer;
        # a ratio against a reference seconds away cancels most of that.
        if "contender" in scn:
            contender = Workload(guard, args.workload, scn["contender"], "contender")
            workloads.append(contender)
            ref = measure_reference(contender, args.reference)
        elif scn.get("churn_in_victim"):
            # The victim is the churner: a twin that marks nothing stands in,
            # so the victim's memory still appears while the peer runs.
            twin = Workload(guard, args.workload, scn["victims"][0] + ["--merge", "none"], "reference")
            try:
                ref = measure_reference(twin, args.reference)
            finally:
                twin.stop()
        if not late:
            peer.start(ctx)
            if contender and getattr(peer, "logpath", None):
                # From the daemon's start: S2's contender may be excluded
                # before the victims appear (the log has no timestamps,
                # so a line is dated when this watch sees it).
                watch = contender_watch(peer.logpath, contender.pid)
            # Let the peer settle (a daemon's first ticks, ksmd meeting the
            # contender) before the scenario's memory appears.
            time.sleep(args.settle)

        c0 = ksm_counters()
        cpu0 = task_cpu_ns(ksmd)
        wait0 = task_runq_wait_ns(ksmd)
        daemon_pid = (peer.own_pids() or [None])[0]
        dcpu0 = process_cpu_ns(daemon_pid) if daemon_pid else None
        dstat0 = process_stat_cpu_s(daemon_pid) if daemon_pid else None
        sampler = Sampler(ksmd, [], scn["expected"], period=scn.get("sample_period", 0.01))
        sampler.metrics_path = peer.metrics_path()
        sampler.base_sharing = c0["pages_sharing"]
        t_start = time.monotonic()
        sampler.t_start = t_start
        sampler.start()
        if contender:
            contender.command("reset")
            cont_wait0 = (time.monotonic(), process_schedstat_ns(contender.pid, 1))
        victims = []
        for i, vargs in enumerate(scn["victims"]):
            # Again before each: another engineer's guest may have started.
            check_memory(scn, sum(workload_bytes(v) for v in scn["victims"][i:]),
                         f"{scn_name} {peer.name}, before victim {i}")
            w = Workload(guard, args.workload, vargs, f"victim{i}", oom_first=scn.get("oom_first", False))
            workloads.append(w)
            victims.append(w)
        if scn.get("churn_in_victim"):
            victims[0].command("reset")
            contender = victims[0]
            cont_wait0 = (time.monotonic(), process_schedstat_ns(contender.pid, 1))
        t_ready = time.monotonic()
        sampler.victims = [w.pid for w in victims]
        if late:
            # Mergeable with ksmd off; the clock runs from the peer's start
            # (for the daemon: its exec, start-up and first ticks included).
            t_ready = time.monotonic()
            peer.start(ctx)
            sampler.metrics_path = peer.metrics_path()
            daemon_pid = (peer.own_pids() or [None])[0]
            dcpu0 = 0 if daemon_pid else None  # its whole life is in the window
            dstat0 = 0.0 if daemon_pid else None
        sampler.t_ready = t_ready
        result["ready_s"] = t_ready - t_start
        if not watch and contender and getattr(peer, "logpath", None) and peer.own_pids():
            # S3's churning victim, or a peer started late
            watch = contender_watch(peer.logpath, contender.pid)
        if variant == "restart" and peer.own_pids():
            # mid-merge: the victims' first merged pages, at most 2 s in
            deadline = t_ready + 2
            while time.monotonic() < deadline and sampler.merging == 0 and sampler.merged_at is None:
                time.sleep(0.005)
            result["restarted_after_s"] = time.monotonic() - t_ready
            result["merging_at_restart"] = sampler.merging
            peer.restart(ctx)
            daemon_pid = peer.own_pids()[0]

        merge_s = None
        if scn["expected"] and not isinstance(peer, Off):
            deadline = t_ready + timeout
            while time.monotonic() < deadline and sampler.merged_at is None:
                time.sleep(0.02)
            if sampler.merged_at is not None:
                merge_s = sampler.merged_at - t_ready
        t_tail = time.monotonic()
        tail_cpu0 = task_cpu_ns(ksmd)
        # The idle tail: after merging (or for the peers that merge nothing, a
        # window of the same length). A timed-out run has no tail: its window
        # is the whole timeout already.
        if merge_s is not None or isinstance(peer, Off) or not scn["expected"]:
            time.sleep(tail)
        t_end = time.monotonic()
        churn = contender.churn_stats() if contender else None
        if daemon_pid:
            # Now, while it runs: the contender's second reference stops it.
            dcpu1 = process_cpu_ns(daemon_pid) + getattr(peer, "killed_cpu_ns", 0)
            status = {l.split(":")[0]: l.split(":")[1].strip() for l in open(f"/proc/{daemon_pid}/status")}
            result.update({
                "daemon_cpu_pct": 100.0 * (dcpu1 - dcpu0) / 1e9 / (t_end - t_start),
                # utime + stime of /proc/PID/stat, whole ticks: the figure
                # ps and top show (restart variant: the last instance's).
                "daemon_stat_cpu_s": process_stat_cpu_s(daemon_pid) - (dstat0 if variant != "restart" else 0),
                "daemon_rss_mib": int(status["VmRSS"].split()[0]) / 1024,
                "daemon_hwm_mib": int(status["VmHWM"].split()[0]) / 1024,
            })
        if churn:
            # How long the churn threads sat runnable without a CPU: the part
            # of their latency that other load on the host, not KSM's lock,
            # explains (ksmd's own CPU shows here too, on 2 CPUs).
            churn["runq_wait_pct"] = (100.0 * (process_schedstat_ns(contender.pid, 1) - cont_wait0[1]) / 1e9 /
                                      (time.monotonic() - cont_wait0[0]) / CHURN_THREADS)
        peer.check_alive()
        cpu1 = task_cpu_ns(ksmd)
        wait1 = task_runq_wait_ns(ksmd)
        c1 = ksm_counters()
        sampler.stop()

        # The shapes are exact: more merging pages than expected means the
        # workloads' content is not what the scenario claims.
        merging_final = 0
        for w in victims:
            try:
                merging_final += read_int(f"/proc/{w.pid}/ksm_merging_pages")
            except (OSError, ValueError):
                pass
        if scn["expected"] and merging_final > scn["expected"]:
            raise RuntimeError(f"victims have {merging_final} merging pages, more than the {scn['expected']} "
                               "the scenario's shape allows")
        if not scn["expected"] and merging_final:
            raise RuntimeError(f"{merging_final} pages merged in a scenario with nothing to merge")
        window = t_end - t_start
        cpu_s = (cpu1 - cpu0) / 1e9
        scanned = c1["pages_scanned"] - c0["pages_scanned"]
        saved = (c1["pages_sharing"] - c0["pages_sharing"]) * PAGE
        result.update({
            "merge_s": merge_s,
            "timed_out": bool(scn["expected"]) and merge_s is None and not isinstance(peer, Off),
            "merging_reached": sampler.merging,
            "merging_final": merging_final,
            "expected": scn["expected"],
            "window_s": window,
            "ksmd_cpu_s": cpu_s,
            "ksmd_cpu_pct": 100.0 * cpu_s / window if window > 0 else 0.0,
            "ksmd_runq_wait_pct": 100.0 * (wait1 - wait0) / 1e9 / window if window > 0 else 0.0,
            "tail_cpu_pct": (100.0 * (cpu1 - tail_cpu0) / 1e9 / (t_end - t_tail)) if t_end - t_tail > 1 else None,
            "pages_scanned": scanned,
            "us_per_page": (cpu_s * 1e6 / scanned) if scanned else None,
            "blocked_pct": 100.0 * sampler.d_lock / sampler.samples if sampler.samples else None,
            "d_other_pct": 100.0 * sampler.d_other / sampler.samples if sampler.samples else None,
            "saved_bytes": saved,
            "cpu_per_gib": (cpu_s / (saved / GIB)) if saved > 0 else None,
            "full_scans": c1["full_scans"] - c0["full_scans"],
            "sharing_series": sampler.series,
            "cpu_series": sampler.cpu_series,
            # ksmd's CPU in each of the daemon's phases: over the run, and in
            # the tail alone ({phase: [cpu_s, seconds]}).
            "cpu_by_phase": cpu_by_phase(sampler.cpu_series),
            "tail_cpu_by_phase": cpu_by_phase(sampler.cpu_series, t_tail - t_start) if t_end - t_tail > 1 else None,
            "final_phase": sampler.cpu_series[-1][2] if sampler.cpu_series else None,
            # what the merge itself cost, against what came after it
            "ksmd_cpu_to_merge_s": cpu_at(sampler.cpu_series, t_ready - t_start + merge_s) if merge_s is not None
            else None,
        })
        if hasattr(peer, "cpu_budget_pct"):
            result["cpu_budget_pct"] = peer.cpu_budget_pct()
        if churn:
            # The second half of the paired reference: the peer stopped and
            # run=0 again, the same contender for as long again. Before and
            # after, so a change in the machine's load during the run (this
            # host's load average reached 16 with other engineers' builds)
            # moves both sides of the ratio alike.
            peer.stop()
            ksm_write("advisor_mode", "none")
            ksm_write("run", 0)
            after = measure_reference(contender, args.reference)
            ref = combine_references(ref, after)
            result["contender_ref"] = ref
            if ref["ops_per_s"] > 0 and ref["p99_us"] > 0:
                churn["thr_vs_off"] = churn["ops_per_s"] / ref["ops_per_s"]
                churn["p99_vs_off"] = churn["p99_us"] / ref["p99_us"]
            result["contender"] = churn
        if isinstance(peer, ClassicKsmtuned):
            result["decisions"] = peer.decisions
        if watch:
            watch.stop()
            result["contended_events"] = watch.events(t_ready)
    finally:
        if sampler and sampler.is_alive():
            sampler.stop()
        if watch and watch.is_alive():
            watch.stop()
        try:
            peer.stop()
        finally:
            for w in workloads:
                w.stop()
            # ksmd must not stay at the peer's rate while the next peer starts.
            ksm_write("advisor_mode", "none")
            ksm_write("run", 0)
    return result


# --------------------------------------------------------------------------- QEMU tenants (Q1, Q2)

# Q1/Q2 (issue 14 item 3): real QEMU guests as the host's tenants, TCG (KVM
# does not boot Linux on this VM), all booted from one image
# (build-tenant-image.sh: Debian's kernel and tenant-init.c). QEMU marks guest
# RAM MADV_MERGEABLE itself (mem-merge=on is the default): they are unmodified
# KSM users. A guest's RAM is 256 MiB; its init fills TENANT_SHARED_MIB the
# same in every guest and TENANT_UNIQUE_MIB of its own, prints a marker on
# the serial console and idles (vCPU halted).
TENANT_MIB = 256
TENANT_SHARED_MIB = 96
TENANT_UNIQUE_MIB = 32
# The contended guest's QEMU churns its own mm with this many threads
# (tests/helpers/churn-preload.c), each as S2's contender churns.
TENANT_CHURN_THREADS = 2
TENANT_MARKER = b"ksmt2-tenant-ready"
TENANT_TAG = "ksmt2-bench"
# Each guest's role in Q1: (name, started before the peer, machine, -sandbox on, churns (ksmt2-churn.so), shared MiB)
Q1_GUESTS = [
    ("early", True, "pc", False, False, TENANT_SHARED_MIB),
    ("nomerge", True, "pc,mem-merge=off", False, False, TENANT_SHARED_MIB),  # must stay unmerged, untouched
    ("sandbox", True, "pc", True, False, TENANT_SHARED_MIB),
    ("late", False, "pc", False, False, TENANT_SHARED_MIB),
    # excluded for contention and readmitted: a guest with little to share,
    # its kernel's and zeroed pages only (see TENANT_CONF)
    ("contended", False, "pc", False, True, 0),
]
# Q2, what the daemon costs the guests: guests that boot while the peer runs,
# in pairs booting side by side: "boot" guests the tenant policy matches
# (the daemon reads their ksm_stat, maps and identity, and would act on
# them) and "ref" guests it does not (another -name: left alone), under the
# same load at the same moment, so their ratio cancels the shared host's
# load, which moves a TCG guest's CPU to boot by a quarter from run to run.
Q2_GUESTS = [(f"{kind}{i}", False, "pc", False, False, TENANT_SHARED_MIB) for i in range(2) for kind in ("boot", "ref")]
TENANT_REF_TAG = "ksmt2-unmatched"

# As the shipped 50-vms.policy (Mode=auto, Method=any, MinAnonMiB=64),
# matched by -name instead of libvirt's cgroup. No MinAge=1h as in
# BENCH_POLICY: a guest that marks its RAM itself is left as it is anyway,
# the mem-merge=off guest must stay untouched by the daemon's own rules
# (issue 14 item 2), and under MinAge the controller's readmission of the
# contended guest is refused ("its policy does not want merging yet",
# verdict_refuses_controller), leaving it unmerged for good.
TENANT_POLICY = f"""# the benchmark's QEMU tenants (scenarios Q1, Q2), told apart by -name
[Match]
Cmdline=*-name {TENANT_TAG}-*
[Merge]
Mode=auto
Method=any
MinAnonMiB=64
"""
# A guest excluded for contention is readmitted ReadmitAfter= after its
# contention stopped; the default (10 min) is longer than a run. The
# controller excludes only a process with at most ExcludeMaxMergingPages
# merged (256 by default) once two full scans have passed since it entered
# KSM; by then every guest of this image has its kernel's and its zeroed
# pages (init_on_alloc) merged with its peers', ~7,400 pages (29 MiB)
# measured on 6.18, so the cap is what an administrator of such guests
# would set: a guest that merges less than 64 MiB may be excluded.
TENANT_READMIT_S = 20
TENANT_CONF = f"""
[Tuning]
ReadmitAfter={TENANT_READMIT_S}s
ExcludeMaxMergingPages=16384
"""


def tenant_image():
    """(kernel, initrd) from build-tenant-image.sh, built once and cached."""
    out = subprocess.run([os.path.join(HERE, "build-tenant-image.sh")], stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        raise RuntimeError("build-tenant-image.sh failed (see its messages above)")
    paths = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
    return paths["kernel"], paths["initrd"]


def kill_with_parent():
    """In a QEMU's child before exec: SIGKILL when the harness dies, even by
    SIGKILL; a guest has nothing to restore and must never outlive the run."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def proc_cpu(pid):
    """(utime, stime, minor faults) of the whole process, exited threads
    included (the schedstat sum over /proc/PID/task would lose QEMU's
    short-lived threads); the faults count the guest's copy-on-write breaks
    of pages ksmd merged or write-protected."""
    st = read_str(f"/proc/{pid}/stat")
    f = st[st.rfind(")") + 2:].split()
    hz = os.sysconf("SC_CLK_TCK")
    return int(f[11]) / hz, int(f[12]) / hz, int(f[7])


def ksm_stat(pid):
    out = {}
    for line in open(f"/proc/{pid}/ksm_stat"):
        k, v = line.split(None, 1)
        out[k.rstrip(":")] = v.strip()
    return out


def churn_preload(workload):
    """ksmt2-churn.so, built beside the workload helper (tests/helpers)."""
    return os.path.join(os.path.dirname(os.path.abspath(workload)), "ksmt2-churn.so")


def churn_report(errlog):
    """(iterations, seconds) from the churn threads' lines in QEMU's log
    (summed, the longest), or None when one did not finish (its guest was
    stopped first)."""
    m = re.findall(r"ksmt2-churn: (\d+) iterations in ([0-9.]+) s", read_str(errlog))
    if len(m) < TENANT_CHURN_THREADS:
        return None
    return sum(int(n) for n, _ in m), max(float(t) for _, t in m)


class Tenant:
    """One QEMU guest of the tenant image. Its serial console goes to a file
    that is polled for the init's marker; the guest's CPU (utime+stime of
    the QEMU process) is taken when the marker is seen, the guest idle from
    then on."""

    def __init__(self, guard, image, dirpath, name, seed, machine, sandbox, churn, shared_mib):
        """churn: None, or (ksmt2-churn.so, seconds): QEMU's own mm gets a
        thread that churns it for that long from its start (churn-preload.c
        says why QMP cannot make QEMU do that)."""
        self.name = name
        self.console = os.path.join(dirpath, f"{name}.console")
        qemu = shutil.which("qemu-system-x86_64")
        if not qemu:
            raise RuntimeError("qemu-system-x86_64 not installed (package qemu-system-x86)")
        tag = TENANT_REF_TAG if name.startswith("ref") else TENANT_TAG
        cmd = [qemu, "-name", f"{tag}-{name}", "-machine", machine, "-accel", "tcg", "-m", str(TENANT_MIB),
               "-smp", "1", "-nodefaults", "-display", "none", "-monitor", "none",
               "-serial", f"file:{self.console}", "-kernel", image[0], "-initrd", image[1],
               "-append", f"console=ttyS0 quiet loglevel=3 mitigations=off tenant_shared_mib={shared_mib} "
                          f"tenant_unique_mib={TENANT_UNIQUE_MIB} tenant_seed={seed}"]
        if sandbox:
            cmd += ["-sandbox", "on"]
        env = None
        if churn:
            env = dict(os.environ, LD_PRELOAD=churn[0], KSMT2_CHURN_SECS=str(churn[1]),
                       KSMT2_CHURN_THREADS=str(TENANT_CHURN_THREADS))
        self.errlog = os.path.join(dirpath, f"{name}.qemu.log")
        with open(self.errlog, "w") as err:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT,
                                         preexec_fn=kill_with_parent, env=env)
        guard.track(self.proc)
        self.guard = guard
        self.pid = self.proc.pid
        self.t_started = time.monotonic()
        self.ready_at = None
        self.cpu_at_ready = None

    def poll_ready(self):
        """True once the marker is on the console; a guest that died or
        printed the init's failure raises."""
        if self.ready_at is not None:
            return True
        try:
            with open(self.console, "rb") as f:
                text = f.read()
        except FileNotFoundError:
            text = b""
        if TENANT_MARKER in text:
            self.utime, self.stime, self.minflt = proc_cpu(self.pid)
            self.cpu_at_ready = self.utime + self.stime
            self.ready_at = time.monotonic()
            return True
        if b"ksmt2-tenant-failed" in text or b"Kernel panic" in text:
            raise RuntimeError(f"guest {self.name} (pid {self.pid}) failed to boot: {self.console}")
        if self.proc.poll() is not None:
            raise RuntimeError(f"guest {self.name} (pid {self.pid}) exited with status {self.proc.returncode}: "
                               f"{read_str(self.errlog)[-300:]!r}")
        return False

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.guard.untrack(self.proc)


def wait_tenants_ready(tenants, timeout):
    """Bounded: every guest's marker, or RuntimeError naming those missing."""
    deadline = time.monotonic() + timeout
    while True:
        if all(t.poll_ready() for t in tenants):
            return
        if time.monotonic() > deadline:
            missing = [f"{t.name} (pid {t.pid})" for t in tenants if t.ready_at is None]
            raise RuntimeError(f"guests {', '.join(missing)} printed no marker within {timeout:.0f}s")
        time.sleep(0.05)


class MergingSeries(threading.Thread):
    """Every 0.5 s, the guests' summed ksm_merging_pages (a counter in the
    mm, no mmap_lock taken): their merged pages, whatever other mergeable
    processes on the host (another engineer's test guests) do to the global
    pages_sharing meanwhile."""

    def __init__(self, t_start):
        super().__init__(daemon=True)
        self.t_start = t_start
        self.pids = []
        self.series = []
        # The same sum without one guest (Q1: the contended one, which the
        # daemon excludes, forgoing its merged pages until the readmission)
        self.apart = None
        self.series_apart = []
        self.stop_ev = threading.Event()

    def totals(self):
        n = n_apart = 0
        for pid in list(self.pids):
            try:
                v = read_int(f"/proc/{pid}/ksm_merging_pages")
            except (OSError, ValueError):
                continue
            n += v
            if pid != self.apart:
                n_apart += v
        return n, n_apart

    def run(self):
        while True:
            t = round(time.monotonic() - self.t_start, 2)
            n, n_apart = self.totals()
            self.series.append((t, n))
            self.series_apart.append((t, n_apart))
            if self.stop_ev.wait(0.5):
                return

    def stop(self):
        self.stop_ev.set()
        self.join()


class LogWatch(threading.Thread):
    """Tails the daemon's log for the first line matching each regular
    expression, and when it was seen."""

    def __init__(self, path, patterns):
        super().__init__(daemon=True)
        self.path = path
        self.patterns = patterns
        self.seen = {}
        self.stop_ev = threading.Event()

    def run(self):
        pos = 0
        while not self.stop_ev.wait(0.1):
            try:
                with open(self.path, "rb") as f:
                    f.seek(pos)
                    chunk = f.read()
            except OSError:
                continue
            nl = chunk.rfind(b"\n")
            if nl < 0:
                continue
            pos += nl + 1
            for line in chunk[:nl].decode(errors="replace").splitlines():
                for key, pat in self.patterns.items():
                    if key not in self.seen and re.search(pat, line):
                        self.seen[key] = (time.monotonic(), line.strip()[:300])

    def stop(self):
        self.stop_ev.set()
        self.join()

    def events(self, t0):
        """{key: {"t_s": seconds from t0 when seen, "line": the log line}}"""
        return {k: {"t_s": t - t0, "line": line} for k, (t, line) in self.seen.items()}


def contender_watch(logpath, pid):
    """The daemon's decision lines on the contended process (Q1's churned
    guest, S2's contender, S3's churning victim), and the actuator's word on
    each: an exclusion the kernel did not carry out, a readmission not done."""
    watch = LogWatch(logpath, {"excluded": rf"excluding pid {pid} ",
                               "exclusion failed": rf"pid {pid}: disable merging .*(failed|not done)",
                               # not the daemon's stop, which readmits what
                               # its policy wants merged now and leaves the
                               # rest to the next instance (S2: the bench's
                               # MinAge=1h says "not yet")
                               "readmitted": rf"readmitting pid {pid} (?!.*as the daemon stops)",
                               "readmission failed": rf"pid {pid}: readmitting (?!.*as the daemon stops).*(failed|not done)",
                               "at the stop": rf"readmitting pid {pid} .*as the daemon stops",
                               # Q1/restart: the instance after the SIGKILL
                               "kept": rf"Keeping the exclusion of pid {pid} ",
                               # an outcome line ("pid N (comm): method M: enabled ... (reason)")
                               # whose reason is not the readmission
                               "switched on": rf": pid {pid} \([^)]*\): method \S+: enabled (?!.*readmitting)"})
    watch.start()
    return watch


def run_tenants(args, guard, scn_name, peer, repeat, ksmd):
    """Q1: guests before and after the peer starts, one with mem-merge=off,
    one with -sandbox on, one whose QEMU churns its own mm; the window
    runs --tenant-window s from the peer's start, the savings sampled every
    0.5 s. Q2: guests that boot while the peer runs; their CPU to the
    marker."""
    base = base_scenario(scn_name)
    guests = Q1_GUESTS if base == "Q1" else Q2_GUESTS
    result = {"scenario": scn_name, "peer": peer.name, "repeat": repeat, "loadavg_1min": os.getloadavg()[0]}
    ctx = {"guard": guard, "scenario": scn_name, "repeat": repeat, "policy": TENANT_POLICY, "conf": TENANT_CONF}
    image = args.tenant_image
    tdir = tempfile.mkdtemp(prefix="ksmt2-tenants-")
    tenants = {}
    churned = None
    sampler = None
    watch = None
    merging = None
    try:
        reset_ksm(guard, set(peer.own_pids()))

        def start(name, seed, machine, sandbox, churn, shared):
            tenants[name] = Tenant(guard, image, tdir, name, seed, machine, sandbox,
                                   (churn_preload(args.workload), args.tenant_churn) if churn else None, shared)
            return tenants[name]

        # Before the peer: booted to their marker with ksmd off, so the peer
        # meets mergeable memory it did not see arrive.
        for i, (name, early, machine, sandbox, churn, shared) in enumerate(guests):
            if early:
                start(name, i + 1, machine, sandbox, churn, shared)
        if tenants:
            wait_tenants_ready(list(tenants.values()), args.tenant_boot_timeout)
        c0 = ksm_counters()
        cpu0 = task_cpu_ns(ksmd)
        wait0 = task_runq_wait_ns(ksmd)
        t0 = time.monotonic()
        sampler = Sampler(ksmd, [], None)
        sampler.base_sharing = c0["pages_sharing"]
        sampler.t_start = t0
        peer.start(ctx)
        daemon_pid = (peer.own_pids() or [None])[0]
        sampler.metrics_path = peer.metrics_path()
        sampler.start()
        merging = MergingSeries(t0)
        merging.pids = [t.pid for t in tenants.values()]
        merging.start()
        logpath = getattr(peer, "logpath", None) if daemon_pid else None
        time.sleep(args.settle)
        late = []
        for i, (name, early, machine, sandbox, churn, shared) in enumerate(guests):
            if not early:
                late.append(start(name, i + 1, machine, sandbox, churn, shared))
                if churn:
                    churned = tenants[name]
        merging.pids = [t.pid for t in tenants.values()]
        if "contended" in tenants:
            merging.apart = tenants["contended"].pid
        if logpath and churned:
            watch = contender_watch(logpath, tenants["contended"].pid)
        wait_tenants_ready(late, args.tenant_boot_timeout)
        if base == "Q1":
            restart = scenario_variant(scn_name) == "restart" and watch is not None
            while time.monotonic() < t0 + args.tenant_window:
                peer.check_alive()
                # Q1/restart: SIGKILLed 5 s after it excluded the churning
                # guest (the exclusion carried out), as Restart=on-failure
                # finds a crashed daemon; the next instance must keep the
                # guest out until its readmission, then give it back its
                # own ranges (README: exclusions outlive the daemon).
                ev = watch.events(t0) if restart else {}
                if restart and "excluded" in ev and time.monotonic() - t0 >= ev["excluded"]["t_s"] + 5:
                    result["restarted_at_s"] = time.monotonic() - t0
                    peer.restart(ctx)
                    daemon_pid = peer.own_pids()[0]
                    restart = False
                time.sleep(0.2)
        t_end = time.monotonic()
        peer.check_alive()
        cpu1 = task_cpu_ns(ksmd)
        wait1 = task_runq_wait_ns(ksmd)
        c1 = ksm_counters()
        if daemon_pid:
            dcpu = process_cpu_ns(daemon_pid) + getattr(peer, "killed_cpu_ns", 0)
            status = {l.split(":")[0]: l.split(":")[1].strip() for l in open(f"/proc/{daemon_pid}/status")}
            result.update({"daemon_cpu_pct": 100.0 * dcpu / 1e9 / (t_end - t0),
                           "daemon_rss_mib": int(status["VmRSS"].split()[0]) / 1024,
                           "daemon_hwm_mib": int(status["VmHWM"].split()[0]) / 1024})
        sampler.stop()
        merging.stop()
        guests_out = {}
        for name, t in tenants.items():
            st = ksm_stat(t.pid)
            guests_out[name] = {
                "pid": t.pid, "late": t in late,
                "boot_s": t.ready_at - t.t_started, "cpu_to_marker_s": t.cpu_at_ready,
                "utime_s": t.utime, "stime_s": t.stime, "minflt": t.minflt,
                "merging_pages": int(st.get("ksm_merging_pages", 0)), "rmap_items": int(st.get("ksm_rmap_items", 0)),
                "mergeable": st.get("ksm_mergeable"), "merge_any": st.get("ksm_merge_any")}
        window = t_end - t0
        cpu_s = (cpu1 - cpu0) / 1e9
        result.update({
            "merge_s": None, "timed_out": False, "expected": None, "window_s": window,
            "ksmd_cpu_s": cpu_s, "ksmd_cpu_pct": 100.0 * cpu_s / window, "tail_cpu_pct": None,
            "ksmd_runq_wait_pct": 100.0 * (wait1 - wait0) / 1e9 / window, "pages_scanned": c1["pages_scanned"] - c0["pages_scanned"],
            "us_per_page": (cpu_s * 1e6 / (c1["pages_scanned"] - c0["pages_scanned"]))
            if c1["pages_scanned"] > c0["pages_scanned"] else None,
            "blocked_pct": 100.0 * sampler.d_lock / sampler.samples if sampler.samples else None,
            "d_other_pct": 100.0 * sampler.d_other / sampler.samples if sampler.samples else None,
            "saved_bytes": (c1["pages_sharing"] - c0["pages_sharing"]) * PAGE,
            "sharing_series": sampler.series,
            "merging_series": merging.series,
            "merging_series_kept": merging.series_apart if merging.apart else None,
            "merged_bytes": merging.series[-1][1] * PAGE,
            # ksmd's CPU in each of the daemon's phases (no tail here)
            "cpu_by_phase": cpu_by_phase(sampler.cpu_series),
            "guests": guests_out,
            "late_guest_cpu_s": sum(g["cpu_to_marker_s"] for g in guests_out.values() if g["late"]),
            "late_guest_boot_s": max(g["boot_s"] for g in guests_out.values() if g["late"]),
            "late_guest_stime_s": sum(g["stime_s"] for g in guests_out.values() if g["late"]),
            "late_guest_kflt": sum(g["minflt"] for g in guests_out.values() if g["late"]) / 1000,
        })
        result["cpu_per_gib"] = cpu_s / (result["saved_bytes"] / GIB) if result["saved_bytes"] > 0 else None
        if base == "Q2":
            matched = sum(g["cpu_to_marker_s"] for n, g in guests_out.items() if n.startswith("boot"))
            unmatched = sum(g["cpu_to_marker_s"] for n, g in guests_out.items() if n.startswith("ref"))
            result["paired_ratio"] = matched / unmatched if unmatched else None
        if churned:
            done = churn_report(churned.errlog)
            result["churn"] = {"iterations": done[0] if done else None, "secs": done[1] if done else None,
                               "started_s": churned.t_started - t0}
        if watch:
            watch.stop()
            result["contended_events"] = watch.events(t0)
    finally:
        for o in (sampler, watch, merging):
            if o is not None and o.is_alive():
                o.stop()
        try:
            peer.stop()
        finally:
            for t in tenants.values():
                t.stop()
            shutil.rmtree(tdir, ignore_errors=True)
            ksm_write("advisor_mode", "none")
            ksm_write("run", 0)
    return result


def annotate_tenants(by_peer):
    """Q1's time to 90% of the aggressive peer's merged pages at the
    window's end (its median), for every run: known only once aggressive
    has run. The guests' own merged pages, not the global pages_sharing:
    another mergeable process on the shared host would count in that."""
    ag = by_peer.get("aggressive")
    if not ag or med([r.get("merged_bytes") for r in ag]) is None:
        return None
    goal = 0.9 * med([r.get("merged_bytes") for r in ag]) / PAGE
    # The same over the guests other than the contended one: the daemon
    # excludes that guest, and its merged pages go with it until the
    # readmission (MADV_UNMERGEABLE and PR_SET_MEMORY_MERGE 0 both unmerge
    # before ksmd stops visiting the mm). In a run where the exclusion
    # comes before 90% of aggressive's total, that total is out of reach
    # until the readmission (ReadmitAfter= later), however fast the others
    # merge; this figure tells the tuning's speed from that. Not a target.
    kept = [r["merging_series_kept"][-1][1] for r in ag if r.get("merging_series_kept")]
    goal_kept = 0.9 * med(kept) if kept else None
    for runs in by_peer.values():
        for r in runs:
            hit = [t for t, s in r.get("merging_series", []) if s >= goal]
            r["t90_s"] = hit[0] if hit else None
            if goal_kept is not None and r.get("merging_series_kept"):
                hit = [t for t, s in r["merging_series_kept"] if s >= goal_kept]
                r["t90_kept_s"] = hit[0] if hit else None
    return goal


# --------------------------------------------------------------------------- report

def med(values):
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def fmt(v, spec="{:.2f}"):
    return "-" if v is None else spec.format(v)


def spread(values, spec=None):
    """Half the range of the repeats, relative to their median: "±12%"."""
    v = [x for x in values if x is not None]
    if len(v) < 2:
        return ""
    m = statistics.median(v)
    if m == 0:  # relative to nothing: say the range itself
        return "±0%" if max(v) == min(v) else f"±{(max(v) - min(v)) / 2:.2g}"
    return f"±{50 * (max(v) - min(v)) / abs(m):.0f}%"


def merge_cell(runs, timeout):
    # a run's own timeout (S6 has its own, per peer) over the benchmark's
    timeout = max(r.get("timeout_s", timeout) for r in runs)
    times = [r["merge_s"] for r in runs]
    if all(t is None for t in times):
        return f">{timeout:.0f}s"
    done = [t for t in times if t is not None]
    cell = f"{statistics.median(done):.2f}s"
    if len(done) > 1:
        cell += " " + spread(done)
    if len(done) < len(times):
        cell += f" ({len(times) - len(done)}x >{timeout:.0f}s)"
    return cell


def merge_median(runs):
    """Median merge time with timeouts as infinity (they are slower than anything)."""
    return statistics.median([r["merge_s"] if r["merge_s"] is not None else float("inf") for r in runs])


COLUMNS = [
    # (header, key or function, format, width)
    ("ksmd cpu s", lambda r: r["ksmd_cpu_s"], "{:.2f}"),
    ("tail cpu%", lambda r: r["tail_cpu_pct"], "{:.2f}"),
    ("us/page", lambda r: r["us_per_page"], "{:.2f}"),
    ("blocked%", lambda r: r["blocked_pct"], "{:.1f}"),
    ("D other%", lambda r: r["d_other_pct"], "{:.1f}"),
    ("saved MiB", lambda r: r["saved_bytes"] / (1 << 20), "{:.0f}"),
    ("cpu s/GiB", lambda r: r["cpu_per_gib"], "{:.2f}"),
    ("cont kops/s", lambda r: r["contender"]["ops_per_s"] / 1000 if "contender" in r else None, "{:.1f}"),
    ("cont p99 us", lambda r: r["contender"]["p99_us"] if "contender" in r else None, "{:.0f}"),
    ("cont runq%", lambda r: r["contender"].get("runq_wait_pct") if "contender" in r else None, "{:.0f}"),
    ("thr/off", lambda r: r["contender"].get("thr_vs_off") if "contender" in r else None, "{:.2f}x"),
    ("p99/off", lambda r: r["contender"].get("p99_vs_off") if "contender" in r else None, "{:.2f}x"),
    ("daemon cpu%", lambda r: r.get("daemon_cpu_pct"), "{:.3f}"),
    ("daemon MiB", lambda r: r.get("daemon_rss_mib"), "{:.1f}"),
    # Q1/Q2 (run_tenants, annotate_tenants)
    ("merged MiB", lambda r: r["merged_bytes"] / (1 << 20) if "merged_bytes" in r else None, "{:.0f}"),
    ("t90 s", lambda r: r.get("t90_s"), "{:.1f}"),
    ("t90 w/o contended s", lambda r: r.get("t90_kept_s"), "{:.1f}"),
    ("late boot s", lambda r: r.get("late_guest_boot_s"), "{:.1f}"),
    ("guest cpu s", lambda r: r.get("late_guest_cpu_s"), "{:.2f}"),
    ("guest sys s", lambda r: r.get("late_guest_stime_s"), "{:.2f}"),
    ("guest kflt", lambda r: r.get("late_guest_kflt"), "{:.0f}"),
    ("matched/ref", lambda r: r.get("paired_ratio"), "{:.3f}"),
]


def metric(runs, fn):
    return med([fn(r) for r in runs])


def print_table(scn_name, by_peer, timeout, out):
    print(f"\n== {scenario_title(scn_name)}", file=out)
    tenants = SCENARIOS[base_scenario(scn_name)].get("tenants")
    if tenants:
        goal = annotate_tenants(by_peer) if base_scenario(scn_name) == "Q1" else None
        if goal:
            print(f"  (merged MiB: the guests' summed ksm_merging_pages at the window's end; t90: from the peer's "
                  f"start to 90% of aggressive's, {goal * PAGE / (1 << 20):.0f} MiB)", file=out)
        print("  (guest cpu/sys s, kflt: the guests booted after the peer's start, utime+stime, stime and "
              "thousands of minor faults to their marker)", file=out)
    cols = [("peer", None, None), ("merge time", None, None)] + COLUMNS
    # Drop columns that are empty for every peer of this scenario.
    present = []
    for c in COLUMNS:
        if any(c[1](r) is not None for runs in by_peer.values() for r in runs):
            present.append(c)
    rows = [["peer", "merge time"] + [c[0] for c in present]]
    for peer, runs in by_peer.items():
        row = [f"{peer} (n={len(runs)})", merge_cell(runs, timeout) if SCENARIOS[base_scenario(scn_name)]["expected"] and peer != "off" else "-"]
        for c in present:
            vals = [c[1](r) for r in runs]
            cell = fmt(med(vals), c[2])
            s = spread(vals, c[2])
            if s:
                cell += " " + s
            row.append(cell)
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  " + "  ".join(x.ljust(w) for x, w in zip(r, widths)), file=out)
    if base_scenario(scn_name) in ("S4", "S6"):
        for peer, runs in by_peer.items():
            series = runs[0]["sharing_series"]
            pts = []
            for mark in (2, 5, 10, 30, 60, 120, 180, 300):
                got = [s for t, s in series if t <= mark]
                if got and series[-1][0] >= mark - 0.5:
                    pts.append(f"{mark}s:{got[-1] * PAGE / (1 << 20):.0f}")
            print(f"  savings over time, {peer} (MiB saved at t): {' '.join(pts)}", file=out)
    if tenants:
        for peer, runs in by_peer.items():
            for r in runs:
                gs = ", ".join(f"{n} {g['merging_pages']}" for n, g in r["guests"].items())
                extra = ""
                if r.get("churn"):
                    c = r["churn"]
                    if "pairs" in c:  # results before the churn thread: QMP object-add/del
                        extra += f"; QMP churn {c['pairs']} object-add/del pairs in {fmt(c['secs'], '{:.0f}')}s"
                    else:
                        extra += (f"; churn thread {c['iterations']} mmap/munmap in {c['secs']:.0f}s"
                                  if c.get("iterations") is not None else "; churn thread did not finish")
                if r.get("restarted_at_s") is not None:
                    extra += f"; SIGKILLed and restarted at {r['restarted_at_s']:.1f}s"
                if r.get("contended_events"):
                    extra += "; " + fmt_events(r["contended_events"])
                print(f"  {peer} run {r['repeat']}: merging pages per guest: {gs}{extra}", file=out)
    if not tenants:
        for peer, runs in by_peer.items():
            for r in runs:
                if "contended_events" in r:
                    print(f"  contender, {peer} run {r['repeat']}: {fmt_events(r['contended_events'])}", file=out)
    for peer, runs in by_peer.items():
        for r in runs:
            if r.get("ksmd_cpu_to_merge_s") is not None:
                print(f"  ksmd CPU until merged, {peer} (run {r['repeat']}): {r['ksmd_cpu_to_merge_s']:.2f} s of "
                      f"{r['ksmd_cpu_s']:.2f} s", file=out)
            if r.get("cpu_by_phase") and any(ph != "-" for ph in r["cpu_by_phase"]):
                tail = f"; in the tail: {fmt_phases(r['tail_cpu_by_phase'])}" if r.get("tail_cpu_by_phase") else ""
                print(f"  ksmd CPU by {peer} phase (run {r['repeat']}): {fmt_phases(r['cpu_by_phase'])}{tail}",
                      file=out)
    for peer, runs in by_peer.items():
        for r in runs:
            if r.get("decisions"):
                print(f"  ksmtuned decisions (run {r['repeat']}): {'; '.join(r['decisions'])}", file=out)
                break


def fmt_events(events):
    """contended_events -> "excluded at 3.1s, readmitted at 24.0s" (S2/S3:
    from the victims' readiness, negative before it) or "neither excluded
    nor readmitted"."""
    if not events:
        return "neither excluded nor readmitted"
    return ", ".join(f"{k} at {e['t_s']:.1f}s" for k, e in sorted(events.items(), key=lambda x: x[1]["t_s"]))


def fmt_phases(phases):
    """{phase: [cpu_s, secs]} -> "burst 1.20 s in 2.0 s (60%), ..."."""
    if not phases:
        return "-"
    return ", ".join(f"{ph} {c:.2f} s in {t:.1f} s ({100 * c / t if t else 0:.0f}%)"
                     for ph, (c, t) in sorted(phases.items(), key=lambda x: -x[1][1]))


INF = float("inf")


def fmt_s(v):
    return ">timeout" if v == INF else f"{v:.2f}s"


def ratio(a, b):
    # Below 1e-3 (a millisecond of CPU, a thousandth of a percent) the peer
    # did nothing and a ratio against it says nothing.
    if a is None or b is None or abs(b) < 1e-3 or a == INF or b == INF:
        return None
    return a / b


RATIO_METRICS = (("cpu", lambda r: r["ksmd_cpu_s"]), ("cpu/GiB", lambda r: r["cpu_per_gib"]),
                 ("tail cpu", lambda r: r["tail_cpu_pct"]), ("blocked", lambda r: r["blocked_pct"]),
                 ("cont thr", lambda r: r.get("contender", {}).get("thr_vs_off")),
                 ("cont p99", lambda r: r.get("contender", {}).get("p99_vs_off")))


def ratio_items(a_runs, b_runs, with_merge, a_name, b_name):
    """["merge 0.85x", "cpu 0.30x", ...]: medians of a_runs over b_runs,
    leaving out what either lacks; a merge that never happened is named."""
    items = []
    if with_merge:
        a, b = merge_median(a_runs), merge_median(b_runs)
        r = ratio(a, b)
        items.append("merge " + (f"{r:.2f}x" if r is not None else
                                 ("never vs never" if a == b == INF else
                                  (f"{b_name} never" if b == INF else f"{a_name} never"))))
    for label, fn in RATIO_METRICS:
        r = ratio(metric(a_runs, fn), metric(b_runs, fn))
        if r is not None:
            items.append(f"{label} {r:.2f}x")
    return items


def print_ratios(scn_name, by_peer, out):
    me = by_peer.get("ksmtuned2")
    if not me:
        return
    parts = []
    for peer, runs in by_peer.items():
        if peer == "ksmtuned2":
            continue
        items = ratio_items(me, runs, SCENARIOS[base_scenario(scn_name)]["expected"] and peer != "off",
                            "ksmtuned2", "peer")
        if items:
            parts.append(f"  ksmtuned2 / {peer}: " + ", ".join(items))
    if parts:
        print("ratios (median ksmtuned2 / median peer):", file=out)
        for p in parts:
            print(p, file=out)


SCALING_PEERS = ("aggressive", "ksmtuned2")


def print_scaling(results, out):
    """Issue 14 item 4: how merge time, ksmd CPU per GiB and the daemon's
    own CPU and RSS grow with the host's mergeable memory, S4 (1.5 GiB) to
    S6 (16 GiB), same shape (75% identical). Medians of each scenario's runs."""
    rows = [(s, p, runs) for s in ("S4", "S6") for p in SCALING_PEERS
            for runs in [results.get(s, {}).get(p)] if runs]
    if len({s for s, _, _ in rows}) < 2:
        return
    print("\n== scaling, S4 (1.5 GiB) to S6 (16 GiB), same shape", file=out)

    def figures(runs):
        gib = runs[0]["mergeable_bytes"] / GIB if runs[0].get("mergeable_bytes") else None
        m = merge_median(runs)
        cpu = metric(runs, lambda r: r["ksmd_cpu_s"])
        return {"GiB": gib, "merge s": m if m != INF else None,
                "ksmd cpu s": cpu, "ksmd s/GiB": cpu / gib if gib else None,
                "us/page": metric(runs, lambda r: r["us_per_page"]),
                "daemon cpu s": metric(runs, lambda r: r.get("daemon_stat_cpu_s")),
                "daemon cpu%": metric(runs, lambda r: r.get("daemon_cpu_pct")),
                "daemon MiB": metric(runs, lambda r: r.get("daemon_rss_mib")),
                "daemon HWM": metric(runs, lambda r: r.get("daemon_hwm_mib"))}
    table = [("scenario", "peer") + tuple(figures(rows[0][2]).keys())]
    got = {}
    for s, p, runs in rows:
        f = figures(runs)
        got[(s, p)] = f
        table.append((s, f"{p} (n={len(runs)})") + tuple(
            (">timeout" if k == "merge s" and v is None else fmt(v, "{:.3f}" if k == "daemon cpu%" else "{:.2f}"))
            for k, v in f.items()))
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for r in table:
        print("  " + "  ".join(x.ljust(w) for x, w in zip(r, widths)), file=out)
    for p in SCALING_PEERS:
        a, b = got.get(("S4", p)), got.get(("S6", p))
        if not a or not b:
            continue
        items = [f"{k} {ratio(b[k], a[k]):.2f}x" for k in a if ratio(b[k], a[k]) is not None]
        print(f"  growth S6/S4, {p}: " + ", ".join(items), file=out)


def time_to_savings(r, goal_bytes, from_start=False):
    """Seconds from the workloads' readiness (from_start: from the
    scenario's start, when the first workload was created) until
    pages_sharing (the 0.5 s series) reached goal_bytes saved; INF if never
    (0 if before)."""
    for t, sharing in r.get("sharing_series") or []:
        if sharing * PAGE >= goal_bytes:
            return t if from_start else max(0.0, t - r.get("ready_s", 0.0))
    return INF


def maintenance_verdict(runs):
    """(ok, detail): every run's daemon in maintain (or idle) at the end of
    the tail, ksmd within CpuBudget= over the part of the tail spent there."""
    ok, details = True, []
    for r in runs:
        phases = r.get("tail_cpu_by_phase") or {}
        cpu, secs = map(sum, zip(*[phases[p] for p in ("maintain", "idle") if p in phases])) if any(
            p in phases for p in ("maintain", "idle")) else (0.0, 0.0)
        budget = r.get("cpu_budget_pct")
        pct = 100 * cpu / secs if secs else None
        good = (r.get("final_phase") in ("maintain", "idle") and pct is not None and budget is not None and
                pct <= budget and r["merge_s"] is not None)
        ok = ok and good
        details.append(f"run {r['repeat']}: ends in {r.get('final_phase') or '?'}, "
                       f"{fmt(pct, '{:.1f}')}% of a core over {secs:.0f} s of maintenance in the tail "
                       f"(CpuBudget={fmt(budget, '{:g}')}%)" + ("" if r["merge_s"] is not None else ", did not merge"))
    return ok, "; ".join(details)


def evaluate_targets(results):
    """The targets of issue 5, each a ratio measured in this run: a list of
    (PASS|FAIL|N/A, target, detail). results: scenario -> peer -> runs."""
    lines = []

    def verdict(name, ok, detail):
        lines.append(("PASS" if ok else ("FAIL" if ok is not None else "N/A "), name, detail))

    def runs(s, p):
        return results.get(s, {}).get(p)

    # S1-S4 and their variants ("S1/start-late"), each against the peers of
    # the same variant.
    for s in sorted(k for k in results if base_scenario(k) in ("S1", "S2", "S3", "S4")):
        b = base_scenario(s)
        me, ag = runs(s, "ksmtuned2"), runs(s, "aggressive")
        if not me or not ag:
            continue
        m, a = merge_median(me), merge_median(ag)
        bound = max(2 * a, a + 1)
        verdict(f"{s} merge time <= max(2x aggressive, aggressive + 1 s)",
                m <= bound if a != float("inf") else None, f"{fmt_s(m)} vs bound {fmt_s(bound)}")
        if b in ("S1", "S4"):
            cm, ca = metric(me, lambda r: r["ksmd_cpu_s"]), metric(ag, lambda r: r["ksmd_cpu_s"])
            # Spending nothing is no achievement when nothing merged.
            verdict(f"{s} ksmd CPU incl. tail <= 0.15x aggressive", cm <= 0.15 * ca and m != INF,
                    f"{cm:.2f}s vs {0.15 * ca:.2f}s (aggressive {ca:.2f}s)" + ("; did not merge" if m == INF else ""))
        if b == "S4":
            gm, ga = metric(me, lambda r: r["cpu_per_gib"]), metric(ag, lambda r: r["cpu_per_gib"])
            verdict(f"{s} CPU-s per GiB saved <= 0.25x aggressive",
                    (gm is not None and gm <= 0.25 * ga and m != INF) if ga is not None else None,
                    f"{fmt(gm)} vs {fmt(ga and 0.25 * ga)} (aggressive {fmt(ga)})")
        if b in ("S2", "S3"):
            # Against the KSM-off reference paired with each run (median of
            # the per-run ratios); the off peer's own ratio is the noise floor.
            tr = metric(me, lambda r: r.get("contender", {}).get("thr_vs_off"))
            pr = metric(me, lambda r: r.get("contender", {}).get("p99_vs_off"))
            off = runs(s, "off")
            ft = metric(off, lambda r: r.get("contender", {}).get("thr_vs_off")) if off else None
            fp = metric(off, lambda r: r.get("contender", {}).get("p99_vs_off")) if off else None
            # The reference is the mean of a KSM-off measure before and one
            # after the run; how far those two differ is the noise the
            # ratio cannot beat (seen: 20909 then 11580 ops/s in one run).
            refs = [r["contender_ref"] for r in me if r.get("contender_ref")]
            drift = [f"{x['before']['ops_per_s']:.0f} -> {x['after']['ops_per_s']:.0f} ops/s, p99 "
                     f"{x['before']['p99_us']:.0f} -> {x['after']['p99_us']:.0f} us" for x in refs
                     if x.get("before", {}).get("ops_per_s") and x.get("after", {}).get("ops_per_s")]
            drift = f"; KSM-off reference before -> after the run: {'; '.join(drift)}" if drift else ""
            verdict(f"{s} contender throughput >= 0.9x KSM off", tr >= 0.9 if tr is not None else None,
                    f"{fmt(tr)}x (off peer vs its own reference: {fmt(ft)}x){drift}")
            verdict(f"{s} contender p99 <= 1.2x KSM off", pr <= 1.2 if pr is not None else None,
                    f"{fmt(pr)}x (off peer vs its own reference: {fmt(fp)}x)")
        de = runs(s, "defaults")
        if de:
            tm = metric(me, lambda r: r["tail_cpu_pct"])
            td = metric(de, lambda r: r["tail_cpu_pct"])
            if m == INF:
                verdict(f"{s} idle-tail ksmd CPU <= 2x defaults'", False, "did not merge: no idle tail")
            else:
                verdict(f"{s} idle-tail ksmd CPU <= 2x defaults'",
                        (tm <= 2 * td) if tm is not None and td is not None else None,
                        f"{fmt(tm, '{:.2f}')}% vs {fmt(td, '{:.2f}')}% of a core")
        for p in ("defaults", "advisor", "ksmtuned"):
            pr = runs(s, p)
            if pr:
                pm = merge_median(pr)
                verdict(f"{s} merge faster than {p}", m < pm,
                        f"{fmt_s(m)} vs {fmt_s(pm)}")
    # S6, issue 14 item 4: the host-size scenario against aggressive.
    me, ag = runs("S6", "ksmtuned2"), runs("S6", "aggressive")
    if me and ag:
        # From the scenario's start, the same moment for every peer, not
        # from the workloads' readiness: creating 16 GiB takes 70-90 s here
        # and competes with ksmd for the two CPUs, so the peer that costs
        # less CPU has its workloads ready sooner, and is timed from a later
        # point of its own merge. Measured on 6.18: aggressive's workloads
        # were ready 4.4 s later than ksmtuned2's; from readiness the 90%
        # took 0.54 s against 7.44 s, from the start 74.5 s against 77.0 s.
        # Neither clock is fair alone: the shared creation is in both
        # readings from the start (so 1.25x allows ~18 s of lag), and
        # aggressive merges during the creation at full speed (so from
        # readiness it has little left). Both are verdicts.
        goal = 0.9 * metric(ag, lambda r: r["saved_bytes"])
        tm = metric(me, lambda r: time_to_savings(r, goal, from_start=True))
        ta = metric(ag, lambda r: time_to_savings(r, goal, from_start=True))
        rm = metric(me, lambda r: time_to_savings(r, goal))
        ra = metric(ag, lambda r: time_to_savings(r, goal))
        ready = (f"ready at {fmt_s(metric(me, lambda r: r.get('ready_s')))} vs "
                 f"{fmt_s(metric(ag, lambda r: r.get('ready_s')))}")
        verdict("S6 time to 90% of aggressive's savings <= 1.25x aggressive's, from the scenario's start",
                tm <= 1.25 * ta if ta != INF else None,
                f"{fmt_s(tm)} vs {fmt_s(ta)} (bound {fmt_s(1.25 * ta)}; 90% = {goal / GIB:.2f} GiB; {ready})")
        verdict("S6 time to 90% of aggressive's savings <= 1.25x aggressive's, from each peer's readiness",
                rm <= 1.25 * ra if ra != INF else None,
                f"{fmt_s(rm)} vs {fmt_s(ra)} (bound {fmt_s(1.25 * ra)}; {ready})")
        cm, ca = metric(me, lambda r: r["ksmd_cpu_s"]), metric(ag, lambda r: r["ksmd_cpu_s"])
        tail = max(r.get("tail_s") or 0 for r in me)
        verdict(f"S6 ksmd CPU over merge + {tail:.0f} s tail <= 0.6x aggressive's",
                cm <= 0.6 * ca and tm != INF,
                f"{cm:.1f}s vs {0.6 * ca:.1f}s (aggressive {ca:.1f}s)" + ("; did not merge" if tm == INF else ""))
    if me:
        verdict("S6 in maintenance within CpuBudget= by the tail's end", *maintenance_verdict(me))
    de = runs("S6", "defaults")
    if me and de:
        verdict("S6 merge faster than defaults", merge_median(me) < merge_median(de),
                f"{fmt_s(merge_median(me))} vs {fmt_s(merge_median(de))}")
    lines += tenant_targets(results)
    me, de = runs("S5", "ksmtuned2"), runs("S5", "defaults")
    if me and de:
        km, kd = metric(me, lambda r: r["ksmd_cpu_pct"]), metric(de, lambda r: r["ksmd_cpu_pct"])
        verdict("S5 idle ksmd CPU <= 2x defaults'", km <= 2 * kd, f"{km:.2f}% vs {kd:.2f}% of a core")
    if me:
        c = metric(me, lambda r: r.get("daemon_cpu_pct"))
        rss = max(r.get("daemon_hwm_mib") or 0 for r in me)
        verdict("S5 daemon CPU <= 0.5% of one core", c is not None and c <= 0.5, f"{fmt(c, '{:.3f}')}%")
        verdict("S5 daemon RSS <= 16 MiB", rss <= 16, f"peak {rss:.1f} MiB")
    return lines


def tenant_targets(results):
    """Issue 14 item 3: Q1 against aggressive and the defaults of the same
    run, the mem-merge=off guest for every peer, the contended guest's
    exclusion and readmission; Q2 the guests' CPU beside the daemon against
    the same ksmd rate without it."""
    lines = []

    def verdict(name, ok, detail):
        lines.append(("PASS" if ok else ("FAIL" if ok is not None else "N/A "), name, detail))

    q1 = results.get("Q1", {})
    me, ag, de = q1.get("ksmtuned2"), q1.get("aggressive"), q1.get("defaults")
    if me and ag:
        annotate_tenants(q1)
        sm, sa = metric(me, lambda r: r["merged_bytes"]), metric(ag, lambda r: r["merged_bytes"])
        verdict("Q1 savings (guests' merged pages) at the window's end >= 98% of aggressive's", sm >= 0.98 * sa,
                f"{sm / (1 << 20):.0f} MiB vs {sa / (1 << 20):.0f} MiB ({100 * sm / sa:.1f}%)" if sa else "-")
        tm, ta = metric(me, lambda r: r.get("t90_s")), metric(ag, lambda r: r.get("t90_s"))
        never = any(r.get("t90_s") is None for r in me)
        km, ka = metric(me, lambda r: r.get("t90_kept_s")), metric(ag, lambda r: r.get("t90_kept_s"))
        verdict("Q1 time to 90% of aggressive's savings <= 1.5x aggressive's",
                (not never and tm <= 1.5 * ta) if ta else None,
                f"{fmt(tm, '{:.1f}')}s vs bound {fmt(ta and 1.5 * ta, '{:.1f}')}s" + ("; not reached" if never else "") +
                (f" (the guests but the contended one, which the daemon excludes: {fmt(km, '{:.1f}')}s vs "
                 f"{fmt(ka and 1.5 * ka, '{:.1f}')}s)" if ka else ""))
    if me and de:
        cm, cd = metric(me, lambda r: r["ksmd_cpu_s"]), metric(de, lambda r: r["ksmd_cpu_s"])
        verdict("Q1 ksmd CPU over the window <= 2x defaults'", cm <= 2 * cd, f"{cm:.2f}s vs {2 * cd:.2f}s")
    for peer, rs in q1.items():
        bad = [f"run {r['repeat']}: {g['merging_pages']} merging, {g['rmap_items']} rmap items, "
               f"mergeable {g['mergeable']}" for r in rs for g in [r["guests"]["nomerge"]]
               if g["merging_pages"] or g["rmap_items"] or g["mergeable"] != "no" or g["merge_any"] == "yes"]
        verdict(f"Q1 mem-merge=off guest unmerged and untouched ({peer})", not bad, "; ".join(bad) or "ksm_stat all zero")
    if me:
        ev = [r.get("contended_events") or {} for r in me]
        ok = all("excluded" in e and "readmitted" in e and e["readmitted"]["t_s"] > e["excluded"]["t_s"] and
                 "exclusion failed" not in e and "readmission failed" not in e for e in ev)
        verdict("Q1 contended guest excluded and readmitted (ksmtuned2)", ok,
                "; ".join(", ".join(f"{k} at {v['t_s']:.1f}s" + (f" ({v['line'][-110:]})" if "failed" in k else "")
                                    for k, v in e.items()) or "neither" for e in ev))
    # Q1/restart: the daemon SIGKILLed while the guest is out. The next
    # instance keeps it out (no "switched on" but by the readmission), the
    # readmission comes ReadmitAfter= after the exclusion, not after the
    # restart, and gives back the guest's own ranges: ksm_mergeable yes,
    # ksm_merge_any no (QEMU marks its RAM with MADV_MERGEABLE).
    for r in results.get("Q1/restart", {}).get("ksmtuned2", []):
        e, g = r.get("contended_events") or {}, r["guests"]["contended"]
        problems = []
        if "restarted_at_s" not in r:
            problems.append("never restarted (not excluded)")
        else:
            if "kept" not in e or e["kept"]["t_s"] < r["restarted_at_s"]:
                problems.append("exclusion not kept by the next instance")
            if "switched on" in e:
                problems.append(f"switched on at {e['switched on']['t_s']:.1f}s not by the readmission")
            if "readmitted" not in e:
                problems.append("not readmitted within the window")
            elif "excluded" in e and e["readmitted"]["t_s"] - e["excluded"]["t_s"] > TENANT_READMIT_S + 4:
                problems.append(f"readmitted {e['readmitted']['t_s'] - e['excluded']['t_s']:.1f}s after the "
                                f"exclusion (ReadmitAfter={TENANT_READMIT_S}s)")
            if "readmitted" in e and (g["mergeable"], g["merge_any"]) != ("yes", "no"):
                problems.append(f"readmitted with ksm_mergeable {g['mergeable']}, ksm_merge_any {g['merge_any']} "
                                "(not its own ranges)")
        verdict(f"Q1/restart exclusion kept across a SIGKILL, readmitted on time with the guest's own ranges "
                f"(run {r['repeat']})", not problems,
                "; ".join(problems) or f"restarted at {r['restarted_at_s']:.1f}s; " +
                ", ".join(f"{k} at {v['t_s']:.1f}s" for k, v in e.items()))
    q2 = results.get("Q2", {})
    de = q2.get("defaults")
    for peer, rs in q2.items():
        if peer == "defaults" or not de:
            continue
        gm, gd = metric(rs, lambda r: r["late_guest_cpu_s"]), metric(de, lambda r: r["late_guest_cpu_s"])
        if peer.startswith("ksmtuned2-observe"):
            verdict(f"Q2 guests' CPU to their marker beside {peer} <= 1.02x defaults' (same ksmd rate)",
                    gm <= 1.02 * gd, f"{gm:.2f}s vs {gd:.2f}s ({100 * (gm / gd - 1):+.1f}%)")
        # Within each run: the guests the daemon manages against those it
        # leaves alone, booted side by side; the defaults' ratio is the noise floor.
        pm, pd = metric(rs, lambda r: r.get("paired_ratio")), metric(de, lambda r: r.get("paired_ratio"))
        if pm is not None and pd is not None and peer.startswith("ksmtuned2"):
            verdict(f"Q2 managed guests' CPU <= 1.02x the unmanaged beside them ({peer})", pm <= 1.02 * pd,
                    f"{pm:.3f} vs the defaults' {pd:.3f} ({100 * (pm / pd - 1):+.1f}%)")
    return lines


def print_targets(lines, out):
    if not lines:
        return
    print("\ntargets (issue 5):", file=out)
    for v, name, detail in lines:
        print(f"  {v}  {name}: {detail}", file=out)
    passed = sum(1 for v, _, _ in lines if v == "PASS")
    print(f"  {passed}/{len(lines)} targets pass", file=out)


# --------------------------------------------------------------------------- main

def save_results(outdir, args, runs):
    """After every run, so an interrupted benchmark keeps what it measured;
    --report re-prints the tables from it."""
    tmp = os.path.join(outdir, "results.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"timeout": args.timeout, "tail": args.tail, "churn_threads": CHURN_THREADS,
                   "kernel": os.uname().release, "runs": runs}, f, indent=1)
    os.replace(tmp, os.path.join(outdir, "results.json"))


def load_results(path):
    """results.json -> (its header, scenario -> peer -> runs)."""
    with open(path) as f:
        data = json.load(f)
    if isinstance(data, list):  # the first format: the runs alone
        data = {"timeout": 120.0, "runs": data}
    set_churn_threads(data.get("churn_threads", 2))  # results before the option had 2
    results = {}
    for r in data["runs"]:
        results.setdefault(r["scenario"], {}).setdefault(r["peer"], []).append(r)
    return data, results


def report(path, out):
    data, results = load_results(path)
    for s in sorted(results):
        print_table(s, results[s], data["timeout"], out)
        print_ratios(s, results[s], out)
    print_scaling(results, out)
    print_targets(evaluate_targets(results), out)


COMPARE_COLUMNS = ("ksmd cpu s", "tail cpu%", "blocked%", "thr/off", "p99/off", "daemon cpu%")


def compare(specs, out):
    """The same scenarios run on several kernels (tests/vmkernel/bench-kernels.sh),
    specs ["stock=DIR/results.json", ...]: one table per scenario, a row per
    peer and kernel; ksmtuned2 against each peer within each kernel; and each
    kernel against the first, per peer. Ratios, because under emulation the
    absolute figures say little."""
    runs_by = {}
    for spec in specs:
        label, sep, path = spec.partition("=")
        if not sep:
            raise ValueError(f"--compare wants LABEL=RESULTS_JSON, not {spec!r}")
        runs_by[label] = load_results(path)
    labels = list(runs_by)
    for label, (data, _) in runs_by.items():
        rs = data["runs"]
        loads = [r["loadavg_1min"] for r in rs if "loadavg_1min" in r]
        load = f", load average {min(loads):.1f} to {max(loads):.1f}" if loads else ""
        print(f"{label}: kernel {data.get('kernel', '?')}, {len(rs)} runs, timeout {data['timeout']:.0f}s{load}",
              file=out)
    columns = [c for name in COMPARE_COLUMNS for c in COLUMNS if c[0] == name]
    scenarios = sorted({s for _, res in runs_by.values() for s in res})
    for s in scenarios:
        with_merge = bool(SCENARIOS[base_scenario(s)]["expected"])
        peers = list(dict.fromkeys(p for _, res in runs_by.values() for p in res.get(s, {})))
        print(f"\n== {scenario_title(s)}", file=out)
        rows = [["peer", "kernel", "merge time"] + [c[0] for c in columns] + ["contender"]]
        for p in peers:
            name = p  # on the peer's first row only
            for label in labels:
                data, res = runs_by[label]
                runs = res.get(s, {}).get(p)
                if not runs:
                    continue
                row = [name, label, merge_cell(runs, data["timeout"]) if with_merge and p != "off" else "-"]
                name = ""
                row += [fmt(metric(runs, c[1]), c[2]) for c in columns]
                row.append("; ".join(fmt_events(r["contended_events"]) for r in runs if "contended_events" in r)
                           or "-")
                rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            print("  " + "  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip(), file=out)
        ratios = []
        for p in peers:
            if p == "ksmtuned2":
                continue
            for label in labels:
                res = runs_by[label][1].get(s, {})
                if "ksmtuned2" in res and p in res:
                    items = ratio_items(res["ksmtuned2"], res[p], with_merge and p != "off", "ksmtuned2", p)
                    ratios.append(f"ksmtuned2 / {p}, {label}: {', '.join(items) or '-'}")
        for label in labels[1:]:
            for p in peers:
                a, b = runs_by[label][1].get(s, {}).get(p), runs_by[labels[0]][1].get(s, {}).get(p)
                if a and b:
                    items = ratio_items(a, b, with_merge and p != "off", label, labels[0])
                    ratios.append(f"{label} / {labels[0]}, {p}: {', '.join(items) or '-'}")
        if ratios:
            print("  ratios (medians):", file=out)
            for line in ratios:
                print("    " + line, file=out)

def main():
    global POLICY_MIN_AGE
    ap = argparse.ArgumentParser(description="ksmtuned2 against its peers on this machine's real KSM.")
    ap.add_argument("--quick", action="store_true",
                    help="1 repeat, S1+S2+S5, 5 s tail, 60 s timeout, 3 s contender reference, without classic ksmtuned")
    ap.add_argument("--scenarios", default=None, help="comma-separated, default S1,S2,S3,S4,S5; S6 (16 GiB, ~10 min) only when named")
    ap.add_argument("--variants", default=None,
                    help="comma-separated among normal,start-late,restart: each scenario S1-S4 in each "
                         "(default normal; also \"S1/start-late\" in --scenarios)")
    ap.add_argument("--peers", default=None,
                    help="comma-separated among off,defaults,aggressive,advisor,ksmtuned,ksmtuned2 "
                         "and, for Q2, " + ",".join(OBSERVE_PEERS))
    ap.add_argument("--repeats", type=int, default=None, help="runs per peer and scenario (default 3)")
    ap.add_argument("--timeout", type=float, default=None, help="merge timeout per run, s (default 120)")
    ap.add_argument("--tail", type=float, default=None, help="idle tail after merging, s (default 20)")
    ap.add_argument("--settle", type=float, default=2.0, help="peer start to scenario start, s (default 2)")
    ap.add_argument("--repeat-all", action="store_true",
                    help="repeat the reference peers too (off, advisor, ksmtuned run once by default)")
    ap.add_argument("--reference", type=float, default=None,
                    help="KSM-off contender reference before each S2/S3 run, s (default 5, quick 3)")
    ap.add_argument("--repeat-timeouts", action="store_true",
                    help="repeat a peer whose first run timed out (by default it is run once: each costs "
                         "the full timeout and ends the same way)")
    ap.add_argument("--ksmtuned2", default=os.environ.get("KSMTUNED2",
                                                         os.path.join(SOURCE_ROOT, "build", "src", "daemon", "ksmtuned2")))
    ap.add_argument("--ksmtuned2-conf", default=None, help="extra configuration appended to the bench config")
    ap.add_argument("--ksmtuned2-args", default="", help="extra daemon arguments, e.g. \"--log-level=debug\"")
    ap.add_argument("--workload", default=os.environ.get("KSM_WORKLOAD", os.path.join(
        SOURCE_ROOT, "build", "tests", "helpers", "ksm-workload")))
    ap.add_argument("--output", default=None, help="directory for results.json and daemon logs")
    ap.add_argument("--churn-threads", type=int, default=CHURN_THREADS,
                    help="churn threads of the S2/S3 contender (default 1; see CHURN_THREADS)")
    ap.add_argument("--policy-min-age", default=POLICY_MIN_AGE,
                    help="MinAge= of the daemon's bench policy (default 1h: it never switches merging on for a "
                         "workload; \"\" for none)")
    ap.add_argument("--tenant-window", type=float, default=150.0,
                    help="Q1: the window from the peer's start to the savings read at its end, s (default 150)")
    ap.add_argument("--tenant-churn", type=float, default=30.0,
                    help="Q1: how long the contended guest's QEMU churns its own mm from its start, s (default 30: "
                         "one episode, over before its readmission 20 s after its exclusion)")
    ap.add_argument("--tenant-boot-timeout", type=float, default=300.0,
                    help="Q1/Q2: bound on the guests' boot to their marker, s (default 300)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target fails (default: report only)")
    ap.add_argument("--report", metavar="RESULTS_JSON", help="print the tables of an earlier run and exit")
    ap.add_argument("--compare", metavar="LABEL=RESULTS_JSON", nargs="+",
                    help="print earlier runs of the same scenarios (e.g. on several kernels) side by side, "
                         "with ksmtuned2/peer ratios within each and each against the first, and exit")
    args = ap.parse_args()
    if args.report:
        report(args.report, sys.stdout)
        return 0
    if args.compare:
        compare(args.compare, sys.stdout)
        return 0

    set_churn_threads(args.churn_threads)
    POLICY_MIN_AGE = args.policy_min_age
    quick = args.quick
    scenarios = (args.scenarios or ("S1,S2,S5" if quick else "S1,S2,S3,S4,S5")).split(",")
    peer_names = (args.peers or ("off,defaults,aggressive,advisor,ksmtuned2" if quick else
                                 "off,defaults,aggressive,advisor,ksmtuned,ksmtuned2")).split(",")
    args.repeats = args.repeats or (1 if quick else 3)
    # Given ones override a scenario's own (S6: run_timeout(), run_tail()).
    args.timeout_given = args.timeout is not None
    args.tail_given = args.tail is not None
    args.timeout = args.timeout or (60.0 if quick else 120.0)
    args.tail = args.tail if args.tail is not None else (5.0 if quick else 20.0)
    args.reference = args.reference if args.reference is not None else (3.0 if quick else 5.0)
    if args.variants:
        variants = args.variants.split(",")
        for v in variants:
            if v != "normal" and v not in VARIANTS:
                ap.error(f"unknown variant {v}")
        scenarios = [s if v == "normal" else f"{s}/{v}" for s in scenarios for v in variants
                     if v == "normal" or base_scenario(s) in ("S1", "S2", "S3", "S4")]
    for s in scenarios:
        v = scenario_variant(s)
        # Q1 has guests before the peer already; its restart kills the
        # daemon while the churning guest is out (run_tenants).
        if base_scenario(s) not in SCENARIOS or (v and (v not in VARIANTS or base_scenario(s) in ("S5", "S6", "Q2") or
                                                        (base_scenario(s) == "Q1" and v != "restart"))):
            ap.error(f"unknown scenario {s}")

    if os.geteuid() != 0 or not os.access(f"{KSM}/run", os.W_OK):
        log("SKIP: the benchmark needs root and a writable /sys/kernel/mm/ksm")
        return 77
    for b in (args.workload, args.ksmtuned2):
        if not os.access(b, os.X_OK):
            log(f"missing {b}: build first (.ci/build)")
            return 1

    if any(SCENARIOS[base_scenario(s)].get("tenants") for s in scenarios):
        if not shutil.which("qemu-system-x86_64"):
            log("SKIP: the QEMU scenarios need qemu-system-x86_64 (package qemu-system-x86)")
            return 77
        args.tenant_image = tenant_image()
        if "Q1" in map(base_scenario, scenarios) and not os.access(churn_preload(args.workload), os.R_OK):
            log(f"missing {churn_preload(args.workload)}: build first (.ci/build)")
            return 1
    outdir = args.output or tempfile.mkdtemp(prefix="ksm-tuning-bench-")
    os.makedirs(outdir, exist_ok=True)
    peers = []
    for n in peer_names:
        if n == "off":
            peers.append(Off())
        elif n == "defaults":
            peers.append(Fixed("defaults", 100, 20, Peer.scenarios + ("Q2", "S6")))
        elif n == "aggressive":
            peers.append(Fixed("aggressive", 100000, 0, Peer.scenarios + ("Q2", "S6")))
        elif n == "advisor":
            peers.append(Advisor())
        elif n == "ksmtuned":
            peers.append(ClassicKsmtuned())
        elif n == "ksmtuned2":
            peers.append(Ksmtuned2(args.ksmtuned2, args.ksmtuned2_conf, shlex.split(args.ksmtuned2_args), outdir))
        elif n in OBSERVE_PEERS:
            peers.append(Ksmtuned2Observe(n, OBSERVE_PEERS[n], args.ksmtuned2, args.ksmtuned2_conf,
                                          shlex.split(args.ksmtuned2_args), outdir))
        else:
            ap.error(f"unknown peer {n}")

    guard = Guard()

    def on_signal(sig, frame):
        raise Interrupted(signal.Signals(sig).name)

    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, on_signal)

    ksmd = find_ksmd()
    t_begin = time.monotonic()
    results = {}
    all_runs = []
    skipped = []
    status = 0
    out = sys.stdout
    print(f"ksm-tuning benchmark: scenarios {','.join(scenarios)}, peers {','.join(peer_names)}, "
          f"{args.repeats} repeat(s), timeout {args.timeout:.0f}s, tail {args.tail:.0f}s; "
          f"kernel {os.uname().release}, {os.cpu_count()} CPUs, "
          f"{meminfo_kib()['MemTotal'] // 1024 // 1024} GiB, load average {os.getloadavg()[0]:.1f}",
          file=out, flush=True)
    try:
        for s in scenarios:
            by_peer = {}
            skip = set()
            for rep in range(1, args.repeats + 1):
                # Peers interleaved within a repeat, so a change in the
                # machine's load hits every peer alike.
                for p in peers:
                    if base_scenario(s) not in p.scenarios or p.name in skip:
                        continue
                    if rep > 1 and not p.repeated and not args.repeat_all:
                        continue
                    t0 = time.monotonic()
                    try:
                        wait_for_memory(SCENARIOS[base_scenario(s)], f"{s} {p.name}")
                    except Skipped as e:
                        log(f"SKIP {s} {p.name} run {rep}: {e}")
                        skipped.append(f"{s} {p.name}: {e}")
                        continue
                    # The lock is held for one run and released between runs:
                    # every run starts from its own checked reset and measures
                    # only within itself, so a kernel test of someone else's
                    # in between cannot skew it, and nobody waits half an hour.
                    guard.acquire()
                    try:
                        r = run_once(args, guard, s, p, rep, ksmd)
                    except Skipped as e:
                        log(f"SKIP {s} {p.name} run {rep}: {e}")
                        skipped.append(f"{s} {p.name}: {e}")
                        continue
                    except (RuntimeError, OSError, ValueError, KeyError) as e:
                        # One run's failure (a daemon that died, a pid gone
                        # early) must not lose the rest of the benchmark.
                        log(f"{s} {p.name} run {rep}: FAILED: {type(e).__name__}: {e}")
                        status = 1
                        continue
                    finally:
                        guard.release()
                    by_peer.setdefault(p.name, []).append(r)
                    all_runs.append(r)
                    save_results(outdir, args, all_runs)
                    merge = (f"{r['merge_s']:.2f}s" if r["merge_s"] is not None else
                             (f">{r['timeout_s']:.0f}s (merging {r['merging_reached']}/{r['expected']})"
                              if r["timed_out"] else "-"))
                    log(f"{s} {p.name:10s} run {rep}: merge {merge}, ksmd {r['ksmd_cpu_s']:.2f} cpu-s, "
                        f"{r['ksmd_runq_wait_pct']:.0f}% waiting for a CPU, load {r['loadavg_1min']:.1f} "
                        f"({time.monotonic() - t0:.0f}s)")
                    if r["timed_out"] and not args.repeat_timeouts:
                        skip.add(p.name)
            results[s] = by_peer
            print_table(s, by_peer, args.timeout, out)
            print_ratios(s, by_peer, out)
            out.flush()
        print_scaling(results, out)
        targets = evaluate_targets(results)
        print_targets(targets, out)
        for x in skipped:
            print(f"  SKIP  {x}", file=out)
        if skipped and not all_runs:
            status = status or 77
        if args.strict and any(v == "FAIL" for v, _, _ in targets):
            status = status or 1
    except (Interrupted, KeyboardInterrupt) as e:
        log(f"interrupted ({e}): restoring KSM")
        status = 130
    finally:
        guard.release()
        save_results(outdir, args, all_runs)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        wall = time.monotonic() - t_begin
        print(f"\ntotal {wall:.0f}s (the harness itself used {100 * (ru.ru_utime + ru.ru_stime) / wall:.1f}% "
              f"of a core); results and daemon logs in {outdir}", file=out)
        if guard.last_restored:
            print("KSM as the benchmark left it: " +
                  " ".join(f"{k}={v}" for k, v in guard.last_restored.items()), file=out)
    return status


if __name__ == "__main__":
    sys.exit(main())
