#!/usr/bin/python3
"""Tessera and Slurm side by side on one machine and one workload (issue 8).

Run through `bench/run`. Two experiments, each on both systems in this one run:

  burst   M queued single-GPU `sleep` jobs released at once on N nodes x 8 GPUs: seconds from
          the release until every job is bound, and until every job's process is running.
  replay  a compressed slice of the ITP trace submitted at its (compressed) submit times to
          Slurm (sched/backfill), to the live Tessera cluster (fifo) and to Tessera's simulator
          (fifo, and backfill with oracle durations): mean and p95 queueing delay, GPU
          utilisation.

Slurm: Debian 12's 22.05 cannot register gres/gpu on emulated nodes, so each GPU is modelled as
one CPU (`-c G`; `-N K --exclusive` for gangs of whole nodes). Every output says so.
Tessera: one tesserad and one tessera-agent --simulate-nodes N (simulated GPUs, real processes).

  colocation  co-location's two clocks (issue 17): one drawn workload of autoscaled services
          and offline batch work, live and in the simulator (bench/colocation_live.py).

Standard library only; run with Debian's /usr/bin/python3.
"""

import argparse
import concurrent.futures
import csv
import datetime
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import colocation_live

GPU_MODEL_NOTE = ("Slurm: each GPU modelled as one CPU (gres/gpu does not register on emulated "
                  "nodes in Debian 12's Slurm 22.05)")
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


from bench_util import log, wait_until  # noqa: E402


def percentile(values, p):
    if not values:
        return None
    s = sorted(values)
    # Nearest rank, as src/sim/stats.cpp.
    k = max(0, min(len(s) - 1, math.ceil(p / 100.0 * len(s)) - 1))
    return s[k]


# --- Tessera ---------------------------------------------------------------------------------

class Tessera:
    """tesserad + one tessera-agent emulating `nodes` nodes, in a temporary directory."""

    def __init__(self, bin_dir, workdir, nodes, gpus_per_node=8, queue_policy="fifo",
                 agent_args=()):
        self.bin_dir, self.nodes = bin_dir, nodes
        self.dir = tempfile.mkdtemp(prefix="tessera-", dir=workdir)
        self.procs = []
        endpoint = os.path.join(self.dir, "endpoint")
        self.procs.append(subprocess.Popen(
            [os.path.join(bin_dir, "tesserad"), "--state", self.dir, "--port", "0",
             "--endpoint-file", endpoint, "--queue-policy", queue_policy,
             "--heartbeat-timeout", "30"],
            stdout=open(os.path.join(self.dir, "tesserad.log"), "w"), stderr=subprocess.STDOUT,
            start_new_session=True))
        try:
            wait_until(lambda: os.path.exists(endpoint) and open(endpoint).read().strip(), 30,
                       what="tesserad")
        except BaseException:
            self.stop()
            raise
        self.url = open(endpoint).read().strip()
        t0 = time.time()
        self.procs.append(subprocess.Popen(
            [os.path.join(bin_dir, "tessera-agent"), "--server", self.url, "--node", "sim",
             "--state", os.path.join(self.dir, "agent"), "--simulate-nodes", str(nodes),
             "--simulate-gpus", f"{gpus_per_node}xH100", *agent_args],
            stdout=open(os.path.join(self.dir, "agent.log"), "w"), stderr=subprocess.STDOUT,
            start_new_session=True))
        # For bench/run's clean-up should this script itself be killed.
        with open(os.path.join(self.dir, "pids"), "w") as f:
            f.write("".join(f"{p.pid}\n" for p in self.procs))
        try:
            wait_until(lambda: self.ready_nodes() >= nodes, 300, 0.5, f"{nodes} Tessera nodes")
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.time() - t0
        log(f"tessera: {nodes} emulated nodes ready in {self.start_seconds:.1f} s ({self.url})")

    def request(self, method, path, body=None, timeout=60):
        data = body.encode() if isinstance(body, str) else body
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/yaml"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def ready_nodes(self):
        try:
            _, body = self.request("GET", "/v1/nodes", timeout=10)
        except (urllib.error.URLError, OSError, ValueError):
            return 0
        return sum(1 for n in body["nodes"] if n["status"] == "Ready")

    def submit(self, spec, hold=False):
        status, body = self.request("POST", "/v1/jobs?hold=true" if hold else "/v1/jobs", spec)
        if status != 201:
            raise RuntimeError(f"tessera: submission refused ({status}): {body}")
        return body

    def jobs(self):
        return self.request("GET", "/v1/jobs")[1]["jobs"]

    def job(self, name):
        return self.request("GET", f"/v1/jobs/default/{name}")[1]

    def cancel(self, name):
        return self.request("DELETE", f"/v1/jobs/default/{name}")[0]

    def stop(self):
        # The agent first (it stops its tasks), then the controller.
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        self.procs = []

    def cpu_seconds(self):
        """CPU time (user + system) of tesserad and the agent so far."""
        total = 0
        for p in self.procs:
            try:
                fields = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            except (OSError, IndexError, ValueError):
                pass
        return total / os.sysconf("SC_CLK_TCK")

    def rss_mib(self):
        total = 0
        for p in self.procs:
            try:
                for line in open(f"/proc/{p.pid}/status"):
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except OSError:
                pass
        return total / 1024


def tessera_spec(name, gpus, command, gpus_per_node=8, kind=None):
    """One job: a BatchJob task for the burst, a TrainingJob (gang of whole nodes above 8).
    `command` is a shell line (a string) or an argv (a list, executed directly)."""
    if kind == "BatchJob":
        body = f"  tasks: 1\n  gpusPerTask: {gpus}\n"
    elif gpus > gpus_per_node:
        body = f"  workers: {gpus // gpus_per_node}\n  gpusPerWorker: {gpus_per_node}\n"
    else:
        body = f"  workers: 1\n  gpusPerWorker: {gpus}\n"
    return (f"apiVersion: tessera/v1\nkind: {kind or 'TrainingJob'}\nmetadata: {{name: {name}}}\n"
            f"spec:\n{body}  maxRestarts: 0\n  gracePeriodSeconds: 1\n"
            + (f"  command: {json.dumps(command)}\n" if isinstance(command, list)
               else f"  shell: true\n  command: [{json.dumps(command)}]\n"))


# --- Slurm -----------------------------------------------------------------------------------

class Slurm:
    def __init__(self, workdir, nodes, gpus_per_node=8, port=26800, start_timeout=900):
        self.nodes = nodes
        self.dir = tempfile.mkdtemp(prefix="slurm-", dir=workdir)
        self.env = dict(os.environ, SLURM_CONF=os.path.join(self.dir, "slurm.conf"),
                        SLURM_BENCH_PORT=str(port), SLURM_BENCH_START_TIMEOUT=str(start_timeout))
        t0 = time.time()
        r = subprocess.run([os.path.join(HERE, "slurm", "cluster.sh"), "start", self.dir,
                            str(nodes), str(gpus_per_node)], env=self.env, capture_output=True,
                           text=True)
        if r.returncode != 0:
            self.stop()
            raise RuntimeError(f"slurm with {nodes} nodes did not start: {r.stderr.strip()}")
        self.start_seconds = time.time() - t0
        log(f"slurm: {nodes} slurmd ready in {self.start_seconds:.1f} s ({self.dir})")

    def run(self, *argv, check=True):
        r = subprocess.run(list(argv), env=self.env, capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")
        return r.stdout

    def sbatch(self, name, gpus, command, gpus_per_node=8, time_limit_min=None, hold=False):
        argv = ["sbatch", "--parsable", "-J", name, "-o", "/dev/null"]
        if hold:
            argv.append("--hold")
        if gpus > gpus_per_node:
            argv += ["-N", str(gpus // gpus_per_node), "--exclusive"]
        else:
            argv += ["-N", "1", "-c", str(gpus)]
        if time_limit_min is not None:
            argv += ["-t", str(time_limit_min)]
        argv += ["--wrap", command]
        return self.run(*argv).strip().split(";")[0]

    def count(self, state):
        return len(self.run("squeue", "-h", "-t", state, "-o", "%i", check=False).split())

    def stop(self):
        subprocess.run([os.path.join(HERE, "slurm", "cluster.sh"), "stop", self.dir],
                       env=self.env, capture_output=True)

    def rss_mib(self):
        total = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                comm = open(f"/proc/{pid}/comm").read().strip()
                if comm in ("slurmd", "slurmctld", "munged"):
                    for line in open(f"/proc/{pid}/status"):
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1])
            except OSError:
                pass
        return total / 1024

    def jobcomp(self):
        """Finished jobs from jobcomp/filetxt: name -> {submit, start, end} (whole seconds)."""
        out = {}
        path = os.path.join(self.dir, "jobcomp.txt")
        if not os.path.exists(path):
            return out
        for line in open(path):
            f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            def ts(k):
                return datetime.datetime.strptime(f[k], "%Y-%m-%dT%H:%M:%S").timestamp()
            out[f["Name"]] = {"submit": ts("SubmitTime"), "start": ts("StartTime"),
                              "end": ts("EndTime"), "state": f.get("JobState")}
        return out


# --- Burst -----------------------------------------------------------------------------------
#
# Two payloads, each released as its own burst on the same cluster:
#   plain  each system's own form of "a job that runs sleep": Tessera executes the argv
#          `sleep 3600.NNNNN` directly; a Slurm batch job is always a script, run by a shell
#          (`--wrap 'exec sleep 3600.NNNNN'`, which becomes the sleep). Measured: when the job's
#          process was created, from the kernel's records (/proc/PID/stat), the same way on both.
#   shell  the same shell line on both systems (`: > MARKER; exec sleep 3600`). Measured: when the
#          shell ran its first command (the marker file's mtime). On this VM a dynamically linked
#          process start costs about 1 ms of CPU (the loader's cpuid probing traps to the
#          hypervisor), so this payload's own start bounds what a scheduler can do; the floor
#          below measures that bound in the same run.

def marker_times(marker_dir, names):
    """When each job's process created its marker file (the file's mtime, ns resolution)."""
    out = {}
    for n in names:
        try:
            out[n] = os.stat(os.path.join(marker_dir, n)).st_mtime_ns / 1e9
        except OSError:
            pass
    return out


def marker_command(marker_dir, name):
    # The same shell line on both systems: the shell creates the marker (a builtin, no extra
    # process), then becomes the sleep.
    return f": > {marker_dir}/{name}; exec sleep 3600"


def settle(baseline_tasks, timeout=120):
    """Waits until the last cluster's processes are gone (the kernel ends a PID namespace's
    processes after its stop returns) and the run queue is short, so that no burst runs while
    the previous one is still being torn down."""
    deadline, calm = time.time() + timeout, 0
    while time.time() < deadline and calm < 2:
        running, total = (int(x) for x in open("/proc/loadavg").read().split()[3].split("/"))
        calm = calm + 1 if total <= baseline_tasks + 50 and running <= 3 else 0
        time.sleep(0.5)


def proc_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


class JobProcesses:
    """The burst's `sleep TAG` processes as the kernel records them: TAG -> creation time
    (/proc/PID/stat starttime, clock ticks since boot, in seconds of CLOCK_BOOTTIME). For a
    Slurm job that is when slurmstepd forked the job's process, before its shell started (in
    Slurm's favour); for Tessera, when the agent spawned it (posix_spawn: fork and exec)."""

    HZ = os.sysconf("SC_CLK_TCK")

    def __init__(self, tags):
        self.tags = set(tags)
        self.created = {}
        self.skip = set(proc_pids())  # what ran before the burst: daemons, not job processes

    def scan(self):
        for pid in proc_pids():
            if pid in self.skip:
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
                comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:]
                if comm != "sleep":
                    continue  # not yet exec'd (or not a job): looked at again next scan
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except (OSError, ValueError):
                continue
            self.skip.add(pid)
            tag = argv[1].decode(errors="replace") if len(argv) > 1 else ""
            if tag in self.tags:
                self.created[tag] = int(rest.split()[19]) / self.HZ
        return len(self.created)


def plain_tags(burst, jobs):
    # A distinct duration per job (and per burst, so that a burst never counts the last one's
    # processes): GNU sleep takes fractional seconds.
    return [f"{3600 + burst}.{i:05d}" for i in range(jobs)]


def spread(times, t0):
    """first / median / last of `times` (seconds), relative to t0."""
    v = sorted(max(0.0, x - t0) for x in times)  # starttime ticks may round below t0
    return {"first_s": v[0], "median_s": v[len(v) // 2], "last_s": v[-1]}


def burst_floor(args, jobs, rep):
    """The machine's bound: the same job processes started by a bare posix_spawn loop in this
    script, no scheduler, no daemons (plain: `sleep TAG`; shell: the shell line)."""
    out = {}
    for payload in ("plain", "shell"):
        markers = tempfile.mkdtemp(prefix="floor-", dir=args.workdir)
        tags = plain_tags(90 + rep, jobs)
        pids, b0, t0 = [], time.clock_gettime(time.CLOCK_BOOTTIME), time.time()
        try:
            for i, tag in enumerate(tags):
                argv = (["/usr/bin/sleep", tag] if payload == "plain" else
                        ["/bin/sh", "-c", marker_command(markers, f"f-{i:05d}")])
                pids.append(os.posix_spawn(argv[0], argv, os.environ, setsid=True))
            if payload == "plain":
                procs = JobProcesses(tags)
                procs.skip -= set(pids)
                wait_until(lambda: procs.scan() == jobs, 120, 0.5, "floor processes")
                out[payload] = spread(procs.created.values(), b0)
            else:
                names = [f"f-{i:05d}" for i in range(jobs)]
                wait_until(lambda: len(marker_times(markers, names)) == jobs, 120, 0.1,
                           "floor markers")
                out[payload] = spread(marker_times(markers, names).values(), t0)
        finally:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except OSError:
                    pass
        log(f"floor ({payload}, no scheduler): {jobs} processes in {out[payload]['last_s']:.2f} s")
        time.sleep(2)
    return out


def wait_running(payload, procs, markers, names, b0, t0, timeout):
    """Waits for every job's process; their times (first, median, last) from the release: plain,
    the processes' creation (b0: the release on CLOCK_BOOTTIME); shell, the markers' mtimes."""
    if payload == "plain":
        wait_until(lambda: procs.scan() == len(names), timeout, 0.5, "every burst process created")
        return spread(procs.created.values(), b0)
    wait_until(lambda: len(marker_times(markers, names)) == len(names), timeout, 0.1,
               "every burst process running")
    return spread(marker_times(markers, names).values(), t0)


def tessera_burst(args, c, jobs, payload, burst):
    names = [f"b{burst}-{i:05d}" for i in range(jobs)]
    tags = plain_tags(burst, jobs)
    markers = tempfile.mkdtemp(prefix="markers-", dir=args.workdir)
    command = (lambda i: ["sleep", tags[i]]) if payload == "plain" else \
        (lambda i: marker_command(markers, names[i]))
    # Queued held (`tessera submit --hold`), then released at once by one request
    # (`tessera release --all`), as Slurm's `sbatch --hold` and `scontrol release`.
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: c.submit(tessera_spec(names[i], 1, command(i), kind="BatchJob"),
                                         hold=True), range(jobs)))
    wait_until(lambda: sum(1 for j in c.jobs()
                           if j["phase"] == "Pending" and j.get("reason") == "Held") >= jobs,
               60, 0.2, "burst queued")
    procs = JobProcesses(tags)
    cpu0 = c.cpu_seconds()
    b0, t0 = time.clock_gettime(time.CLOCK_BOOTTIME), time.time()
    status, body = c.request("POST", "/v1/release", json.dumps({"all": True}))
    t_release = time.time() - t0
    if status != 200 or len(body["released"]) != jobs:
        raise RuntimeError(f"tessera: release answered {status}: {str(body)[:200]}")
    running = wait_running(payload, procs, markers, names, b0, t0, 600)
    busy_cpu = c.cpu_seconds() - cpu0
    # Bound: the task's creation (the bind's commit); started: the agent's TaskStarted
    # (the launcher returned: the process exists and has exec'd).
    def bound_and_started(n):
        for _ in range(100):  # the agent's report may trail its launch by a heartbeat
            t = c.job(n)["taskList"][0]
            if t["startedMs"]:
                break
            time.sleep(0.1)
        return t["createdMs"] / 1000.0, t["startedMs"] / 1000.0
    bound, started = zip(*map(bound_and_started, names))
    res = {"payload": payload, "bound_s": max(bound) - t0, "first_bound_s": min(bound) - t0,
           "release_request_s": t_release,
           "started_s": max(started) - t0 if all(started) else None,
           "running_s": running["last_s"], "first_running_s": running["first_s"],
           "median_running_s": running["median_s"], "control_plane_cpu_s": busy_cpu,
           "load_average": os.getloadavg()}
    log(f"tessera {payload} burst of {jobs}: release request {t_release:.3f} s, bound "
        f"{res['first_bound_s']:.3f}-{res['bound_s']:.3f} s, agent started {res['started_s']} s, "
        f"{'created' if payload == 'plain' else 'running'} {running['first_s']:.2f}-"
        f"{running['last_s']:.2f} s, control plane CPU {busy_cpu:.2f} s, "
        f"load {res['load_average'][0]:.1f}")
    return res


def burst_pair(args, jobs, rep, start_cluster, first_measures, run_burst):
    """One repeat on one system: a plain and a shell burst, each on a freshly started cluster
    once the previous one's processes are gone (a Slurm cluster that has just cancelled 1,000
    jobs answers the next release several times slower)."""
    out = {}
    for k, payload in enumerate(("plain", "shell")):
        settle(args.baseline_tasks)
        cluster = start_cluster(k)
        try:
            if k == 0:
                out.update(first_measures(cluster))
            out[payload] = run_burst(args, cluster, jobs, payload, 2 * rep + k)
        finally:
            cluster.stop()
    return out


def burst_tessera(args, nodes, jobs, rep):
    def first_measures(c):
        out = {"rss_mib": c.rss_mib(), "start_seconds": c.start_seconds}
        if rep == 0:
            # What keeping `nodes` nodes alive costs: the control plane's CPU over 10 idle
            # seconds (every node heartbeats once a second).
            cpu0, w0 = c.cpu_seconds(), time.time()
            time.sleep(10)
            out["idle_cpu_fraction"] = (c.cpu_seconds() - cpu0) / (time.time() - w0)
        return out
    return burst_pair(args, jobs, rep, lambda k: Tessera(args.bin_dir, args.workdir, nodes),
                      first_measures, tessera_burst)


def slurm_burst(args, s, jobs, payload, burst):
    names = [f"b{burst}-{i:05d}" for i in range(jobs)]
    tags = plain_tags(burst, jobs)
    markers = tempfile.mkdtemp(prefix="markers-", dir=args.workdir)
    command = (lambda i: f"exec sleep {tags[i]}") if payload == "plain" else \
        (lambda i: marker_command(markers, names[i]))
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(lambda i: s.sbatch(names[i], 1, command(i), hold=True), range(jobs)))
    wait_until(lambda: s.count("PD") >= jobs, 60, 0.2, "burst queued")
    procs = JobProcesses(tags)
    b0, t0 = time.clock_gettime(time.CLOCK_BOOTTIME), time.time()
    s.run("scontrol", "release", ",".join(ids))
    t_release = time.time() - t0
    # Bound: the first `squeue` poll (every 0.2 s) with no job pending; all RUNNING: the first
    # poll with every job RUNNING (Slurm's own state, set when it allocated the job).
    wait_until(lambda: s.count("PD") == 0, 900, 0.2, "every burst job bound")
    bound = time.time() - t0
    wait_until(lambda: s.count("R") >= jobs, 900, 0.2, "every burst job RUNNING")
    state_running = time.time() - t0
    running = wait_running(payload, procs, markers, names, b0, t0, 900)
    res = {"payload": payload, "bound_s": bound, "release_request_s": t_release,
           "state_running_s": state_running, "running_s": running["last_s"],
           "first_running_s": running["first_s"], "median_running_s": running["median_s"],
           "bound_resolution_s": 0.2, "load_average": os.getloadavg()}
    log(f"slurm {payload} burst of {jobs}: release request {t_release:.3f} s, bound "
        f"{bound:.2f} s, all RUNNING {state_running:.2f} s, "
        f"{'created' if payload == 'plain' else 'running'} {running['first_s']:.2f}-"
        f"{running['last_s']:.2f} s, load {res['load_average'][0]:.1f}")
    return res


def burst_slurm(args, nodes, jobs, rep):
    # Each cluster on other ports than the last (slurmctld's listening port may still be held
    # just after a stop), four sets in turn.
    return burst_pair(
        args, jobs, rep,
        lambda k: Slurm(args.workdir, nodes,
                        port=args.slurm_port + (nodes + 100) * ((2 * rep + k) % 4)),
        lambda s: {"start_seconds": s.start_seconds, "rss_mib": s.rss_mib()}, slurm_burst)


def summarise(runs):
    """The median of every measure over the repeats (the ratios are of these medians) and, with
    more than one repeat, its range; anything else from the first run."""
    out = {}
    for key, first in runs[0].items():
        vals = [r.get(key) for r in runs]
        if isinstance(first, dict):
            out[key] = summarise([v for v in vals if isinstance(v, dict)])
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            out[key] = statistics.median(vals)
            if len(runs) > 1:
                out[key + "_range"] = [min(vals), max(vals)]
        else:
            out[key] = first
    return out


# --- Trace replay ----------------------------------------------------------------------------

def trace_slice(args):
    """Rows [start, start+count) of the ITP file with 1..8 GPUs or whole nodes of 8, times divided
    by the compression factor and rounded to whole seconds (durations at least 1 s)."""
    rows = list(csv.DictReader(open(args.trace)))
    jobs = []
    for r in rows[args.slice_start:]:
        g, d = int(r["num_gpu"]), float(r["duration"])
        if g < 1 or d <= 0 or (g > 8 and g % 8 != 0) or g > args.replay_nodes * 8:
            continue
        jobs.append({"id": r["job_id"], "submit": float(r["submission_time"]), "duration": d,
                     "gpus": g})
        if len(jobs) == args.slice_jobs:
            break
    base = jobs[0]["submit"]
    for i, j in enumerate(jobs):
        j["name"] = f"r-{i:04d}"
        j["submit_s"] = int(round((j["submit"] - base) / args.compress))
        j["duration_s"] = max(1, int(round(j["duration"] / args.compress)))
    return jobs


def write_slice_csv(jobs, path):
    with open(path, "w") as f:
        f.write("job_id,submission_time,duration,num_gpu\n")
        for j in jobs:
            f.write(f"{j['name']},{j['submit_s']},{j['duration_s']},{j['gpus']}\n")


def replay_metrics(records, total_gpus):
    """records: name -> (gpus, submit, start, end) in seconds. The simulator's definitions:
    queueing delay = first start - submit; utilisation = allocated GPU-seconds / (GPUs x (last
    finish - first submit))."""
    delays = [r[2] - r[1] for r in records.values()]
    first = min(r[1] for r in records.values())
    last = max(r[3] for r in records.values())
    busy = sum(r[0] * (r[3] - r[2]) for r in records.values())
    return {"jobs": len(records), "mean_queue_s": statistics.mean(delays),
            "p95_queue_s": percentile(delays, 95), "gpu_utilisation": busy / (total_gpus * (last - first)),
            "makespan_s": last - first}


def submit_on_schedule(jobs, submit_one):
    """Submits each job at its compressed time from now; returns the worst lateness (s)."""
    t0 = time.time()
    late = 0.0
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futures = []
        for j in jobs:
            delay = t0 + j["submit_s"] - time.time()
            if delay > 0:
                time.sleep(delay)
            late = max(late, time.time() - t0 - j["submit_s"])
            futures.append(pool.submit(submit_one, j))
        for f in futures:
            f.result()
    return late


def replay_tessera(args, jobs):
    c = Tessera(args.bin_dir, args.workdir, args.replay_nodes, queue_policy="fifo")
    try:
        late = submit_on_schedule(jobs, lambda j: c.submit(
            tessera_spec(j["name"], j["gpus"], f"exec sleep {j['duration_s']}")))
        names = {j["name"]: j for j in jobs}
        wait_until(lambda: all(x["phase"] in ("Succeeded", "Failed", "Cancelled")
                               for x in c.jobs() if x["name"] in names), 3600, 1.0,
                   "every replayed job finished")
        records = {}
        for x in c.jobs():
            if x["name"] in names:
                records[x["name"]] = (names[x["name"]]["gpus"], x["submitTimeMs"] / 1000.0,
                                      x["startTimeMs"] / 1000.0, x["finishTimeMs"] / 1000.0)
        m = replay_metrics(records, args.replay_nodes * 8)
        m["submit_lateness_max_s"] = late
        m["failed"] = sum(1 for x in c.jobs() if x["name"] in names and x["phase"] != "Succeeded")
        log(f"tessera live replay: {m}")
        return m
    finally:
        c.stop()


def replay_slurm(args, jobs):
    s = Slurm(args.workdir, args.replay_nodes, port=args.slurm_port)
    try:
        # Backfill needs time limits: each job asks for its duration rounded up to minutes
        # (Slurm's unit), as users do.
        late = submit_on_schedule(jobs, lambda j: s.sbatch(
            j["name"], j["gpus"], f"exec sleep {j['duration_s']}",
            time_limit_min=max(1, math.ceil(j["duration_s"] / 60.0)) + 1))
        names = {j["name"]: j for j in jobs}
        wait_until(lambda: len(set(s.jobcomp()) & set(names)) == len(names), 3600, 1.0,
                   "every replayed Slurm job finished")
        comp = s.jobcomp()
        records = {n: (names[n]["gpus"], comp[n]["submit"], comp[n]["start"], comp[n]["end"])
                   for n in names}
        m = replay_metrics(records, args.replay_nodes * 8)
        m["submit_lateness_max_s"] = late
        m["failed"] = sum(1 for n in names if comp[n]["state"] != "COMPLETED")
        log(f"slurm replay: {m}")
        return m
    finally:
        s.stop()


def replay_sim(args, jobs):
    """Tessera's simulator on the same slice: fifo (the live cluster's policy) and backfill with
    oracle durations (closest to Slurm's backfill on exact time limits)."""
    out = tempfile.mkdtemp(prefix="sim-", dir=args.workdir)
    path = os.path.join(out, "slice.csv")
    write_slice_csv(jobs, path)
    r = subprocess.run([os.path.join(args.bin_dir, "tessera"), "sim", "--experiment", "replay",
                        "--trace", path, "--cluster", f"{args.replay_nodes}x8",
                        "--policy", "fifo,backfill", "--out", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"tessera sim: {r.stderr.strip()}")
    summary = json.load(open(os.path.join(out, "summary.json")))
    results = {}
    for run in summary["results"]:
        results[run["policy"]] = {
            "jobs": run["jobs"]["finished"], "mean_queue_s": run["queue_seconds"]["mean"],
            "p95_queue_s": run["queue_seconds"]["p95"],
            "gpu_utilisation": run["gpu_allocation_ratio"],
            "makespan_s": run["makespan_seconds"], "oracle": run["oracle"]}
    log(f"simulator: {results}")
    return results


# --- Two clocks: elastic jobs, topology-constrained gangs and lost nodes -----------------------
#
# The same compressed trace slice through the live cluster (`tessera up --cluster`, one agent
# emulating every node of the cluster file) and the simulator (`tessera sim --experiment replay`
# on the same file): gangs of whole nodes alternate between elastic (minWorkers = half) and
# `topology.require: leaf`; emulated nodes die at given trace times (the agent's failure drill:
# their processes SIGKILLed, their heartbeats stopped) and the simulator gets the same failures
# as a failure file, detected after the live controller's measured detection time.
#
# Every live job runs the same program, one that keeps its progress as a checkpoint: rank 0
# saves the work done (in ms of run time at full size) on SIGTERM; at WORLD_SIZE w of a nominal
# n it runs (duration - done) * n / w more (@DUR@: the duration in ms, @NOM@: n). That is the simulator's model of a job that
# checkpoints on SIGTERM: a preemption or resize keeps every bit of work, a lost rank 0 loses
# the run (docs/benchmarks.md, Two clocks).

PROGRESS_SH = r"""mkdir -p "$TESSERA_CHECKPOINT_DIR"; f="$TESSERA_CHECKPOINT_DIR/done_ms"; did=0
[ -f "$f" ] && did=$(cat "$f")
left=$(( (@DUR@ - did) * @NOM@ / WORLD_SIZE )); [ "$left" -lt 0 ] && left=0
start=$(date +%s%3N)
save() { [ "$RANK" = 0 ] && echo $(( did + ($(date +%s%3N) - start) * WORLD_SIZE / @NOM@ )) > "$f.t" && mv "$f.t" "$f"; exit 0; }
trap save TERM
sleep $(( left / 1000 )).$(printf %03d $(( left % 1000 ))) & wait $!
[ "$RANK" = 0 ] && echo @DUR@ > "$f"; exit 0"""

TWO_CLOCKS_CLUSTER = """topology:
  levels: [spine, leaf]
pools:
  - name: h100
    count: {nodes}
    gpus: 8
    model: H100
    fanout: {{spine: {leaves}, leaf: {per_leaf}}}
"""


def two_clocks_jobs(args):
    """The replay slice (jobs up to --replay-nodes x 8 GPUs) at millisecond resolution (not rounded to whole seconds: a submission and
    a completion at the same whole second race live, where a completion is reported tens of ms
    after its process ends), each gang of whole nodes made elastic or leaf-constrained in turn."""
    jobs = trace_slice(args)
    base = jobs[0]["submit"]
    gangs = 0
    for j in jobs:
        j["submit_ms"] = int(round((j["submit"] - base) / args.compress * 1000))
        j["duration_ms"] = max(1000, int(round(j["duration"] / args.compress * 1000)))
        n = j["gpus"] // 8 if j["gpus"] > 8 else 0
        if n >= 2:
            per_leaf = args.two_clocks_nodes // args.two_clocks_leaves
            if gangs % 2 == 0 or n > per_leaf:
                j["min_workers"], j["max_workers"] = (n + 1) // 2, n
            else:
                j["require"] = "leaf"
            gangs += 1
    return jobs


def two_clocks_spec(j, ckpt_dir):
    n = j["gpus"] // 8 if j["gpus"] > 8 else 1
    gpw = 8 if j["gpus"] > 8 else j["gpus"]
    lines = [f"apiVersion: tessera/v1", "kind: TrainingJob", f"metadata: {{name: {j['name']}}}",
             "spec:", f"  workers: {n}", f"  gpusPerWorker: {gpw}", "  maxRestarts: 100",
             "  gracePeriodSeconds: 5", f"  checkpoint: {{dir: '{ckpt_dir}/{j['name']}'}}"]
    if "min_workers" in j:
        lines.append(f"  elastic: {{minWorkers: {j['min_workers']}, maxWorkers: {j['max_workers']}}}")
    if "require" in j:
        lines.append(f"  topology: {{require: {j['require']}}}")
    program = PROGRESS_SH.replace("@DUR@", str(j["duration_ms"])).replace("@NOM@", str(n))
    lines += ["  shell: true", f"  command: [{json.dumps(program)}]"]
    return "\n".join(lines) + "\n"


def two_clocks_failures(args):
    """(compressed trace second, node name): three distinct nodes, in turn in each leaf, at 1/4,
    1/2 and 3/4 of the slice's submissions."""
    span = two_clocks_jobs(args)[-1]["submit_ms"] / 1000.0
    per_leaf = args.two_clocks_nodes // args.two_clocks_leaves
    return [(round(span * k / 4, 3),
             f"h100-{((k % args.two_clocks_leaves) * per_leaf + 3 + k) % args.two_clocks_nodes:04d}")
            for k in (1, 2, 3)]


def two_clocks_live(args, jobs, failures, cluster_file):
    state = tempfile.mkdtemp(prefix="tessera-twoclocks-", dir=args.workdir)
    ckpt = os.path.join(state, "ckpt")
    r = subprocess.run([os.path.join(args.bin_dir, "tessera"), "up", "--state", state,
                        "--cluster", cluster_file, "--insecure", "--heartbeat-timeout", "10",
                        "--bin-dir", args.bin_dir, "--timeout", "120"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"tessera up --cluster: {r.stderr.strip()}")
    url = open(os.path.join(state, "endpoint")).read().strip()

    def request(method, path, body=None):
        req = urllib.request.Request(url + path, data=body.encode() if body else None,
                                     method=method, headers={"Content-Type": "application/yaml"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read() or b"null")
    try:
        agents = {n["name"]: n["agentUrl"] for n in request("GET", "/v1/nodes")["nodes"]}
        actions = sorted([(j["submit_ms"] / 1000.0, 0, "submit", j) for j in jobs] +
                         [(t, 1, "fail", node) for t, node in failures], key=lambda a: a[:2])
        t0, late = time.time(), 0.0
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            futures = []
            for at, _, kind, what in actions:
                delay = t0 + at - time.time()
                if delay > 0:
                    time.sleep(delay)
                late = max(late, time.time() - t0 - at)
                if kind == "submit":
                    futures.append(pool.submit(request, "POST", "/v1/jobs",
                                               two_clocks_spec(what, ckpt)))
                else:
                    req = urllib.request.Request(agents[what] + f"/v1/emulated/{what}/fail",
                                                 data=b"", method="POST")
                    urllib.request.urlopen(req, timeout=10).read()
                    log(f"two clocks: node {what} killed at {time.time() - t0:.2f} s (trace {at} s)")
            for f in futures:
                f.result()
        names = {j["name"] for j in jobs}
        wait_until(lambda: all(x["phase"] in ("Succeeded", "Failed", "Cancelled")
                               for x in request("GET", "/v1/jobs")["jobs"] if x["name"] in names),
                   3600, 1.0, "every two-clocks job finished")
        delays, gpu_s, recoveries, failed = [], 0.0, 0, 0
        for x in request("GET", "/v1/jobs")["jobs"]:
            if x["name"] not in names:
                continue
            delays.append((x["startTimeMs"] - x["submitTimeMs"]) / 1000.0)
            recoveries += x.get("restarts", 0)
            failed += x["phase"] != "Succeeded"
            for t in request("GET", f"/v1/jobs/default/{x['name']}")["taskList"]:
                if t.get("finishedMs"):
                    gpu_s += len(t["gpus"]) * (t["finishedMs"] - t["createdMs"]) / 1000.0
        resizes, since = 0, 0
        while True:
            ev = request("GET", f"/v1/events?since={since}&limit=5000")["events"]
            if not ev:
                break
            resizes += sum(1 for e in ev if e["type"] == "JobResizing")
            since = ev[-1]["seq"]
        m = {"jobs": len(delays), "failed": failed, "mean_queue_s": statistics.mean(delays),
             "allocated_gpu_hours": gpu_s / 3600.0, "resizes": resizes, "recoveries": recoveries,
             "submit_lateness_max_s": late}
        log(f"two clocks, live: {m}")
        return m
    finally:
        subprocess.run([os.path.join(args.bin_dir, "tessera"), "down", "--state", state],
                       capture_output=True)


def two_clocks_sim(args, jobs, failures, cluster_file):
    out = tempfile.mkdtemp(prefix="sim-twoclocks-", dir=args.workdir)
    trace, fails = os.path.join(out, "trace.csv"), os.path.join(out, "failures.csv")
    with open(trace, "w") as f:
        f.write("id,submit_time,gpus,duration,require,min_workers,max_workers\n")
        for j in jobs:
            f.write(f"{j['name']},{j['submit_ms'] / 1000.0:.3f},{j['gpus']},"
                    f"{j['duration_ms'] / 1000.0:.3f},"
                    f"{j.get('require', '')},{j.get('min_workers', '')},"
                    f"{j.get('max_workers', '')}\n")
    with open(fails, "w") as f:
        f.write("time_seconds,component,target\n")
        for t, node in failures:
            f.write(f"{t},host,{node}\n")
    r = subprocess.run([os.path.join(args.bin_dir, "tessera"), "sim", "--experiment", "replay",
                        "--trace", trace, "--cluster", cluster_file, "--policy", "fifo",
                        "--placement", "bestfit", "--failures", fails,
                        "--recovery-times", "measured", "--out", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"tessera sim: {r.stderr.strip()}")
    run = json.load(open(os.path.join(out, "summary.json")))["results"][0]
    m = {"jobs": run["jobs"]["finished"], "mean_queue_s": run["queue_seconds"]["mean"],
         "allocated_gpu_hours": run["allocated_gpu_hours"], "resizes": run["resizes"],
         "recoveries": run["recoveries"]}
    log(f"two clocks, simulator: {m}")
    return m


def two_clocks(args):
    jobs = two_clocks_jobs(args)
    failures = two_clocks_failures(args)
    cluster_file = os.path.join(args.workdir, "two-clocks-cluster.yaml")
    with open(cluster_file, "w") as f:
        f.write(TWO_CLOCKS_CLUSTER.format(nodes=args.two_clocks_nodes,
                                          leaves=args.two_clocks_leaves,
                                          per_leaf=args.two_clocks_nodes // args.two_clocks_leaves))
    res = {"trace": os.path.relpath(args.trace, REPO), "slice_start": args.slice_start,
           "jobs": len(jobs), "compress": args.compress, "nodes": args.two_clocks_nodes,
           "leaves": args.two_clocks_leaves, "failures": failures,
           "elastic": sum(1 for j in jobs if "min_workers" in j),
           "leaf_constrained": sum(1 for j in jobs if "require" in j)}
    res["sim"] = two_clocks_sim(args, jobs, failures, cluster_file)
    res["live"] = two_clocks_live(args, jobs, failures, cluster_file)
    return res


# --- Report ----------------------------------------------------------------------------------

def machine():
    model = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem = 0
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal:"):
            mem = int(line.split()[1]) / 1024 / 1024
    return {"cores": os.cpu_count(), "cpu": model, "memory_gib": round(mem, 1),
            "kernel": platform.release(), "load_average": os.getloadavg()}


BEGIN = "<!-- bench/run: begin (generated by bench/run from out/.../results.json; edit the script, not this) -->"
END = "<!-- bench/run: end -->"


def fmt_s(v):
    return "n/a" if v is None else (f"{v:.2f}" if v < 100 else f"{v:.0f}")


def ratio(a, b):
    return "n/a" if not a or not b else f"{b / a:.1f}x"


def render(results):
    m = results["machine"]
    la, le = m["load_average"], m.get("load_average_end", m["load_average"])
    lines = [BEGIN, "", "## Tessera and Slurm side by side (`bench/run`)", "",
             f"Run {results['date']} on the development VM: {m['cores']} cores ({m['cpu']}), "
             f"{m['memory_gib']} GiB, kernel {m['kernel']}; load average "
             f"{la[0]:.1f} at the start and {le[0]:.1f} at the end (other engineers' builds share "
             "the machine, so absolute times vary between runs: compare the ratios, which come "
             "from this one run). Slurm: `" + results["slurm_version"] + "` from Debian 12, one "
             "`slurmd` per emulated node on 127.0.0.1, `select/cons_tres`, `sched/backfill`. "
             "**" + results["slurm_gpu_model"] + "**. Tessera: one `tesserad` and one "
             "`tessera-agent --simulate-nodes N` (simulated GPUs); every task is a real process "
             "on both systems.", ""]
    if results.get("burst"):
        fl = results.get("burst_floor", {})
        lines += ["### Burst: single-GPU `sleep` jobs released at once", "",
                  "Each burst is queued held on an idle cluster (Slurm: `sbatch --hold`; Tessera: "
                  "`POST /v1/jobs?hold=true`, i.e. `tessera submit --hold`), then released by one "
                  "request (Slurm: one `scontrol release ID,ID,...`; Tessera: `POST /v1/release "
                  "{\"all\": true}`, i.e. `tessera release --all`). Every time is from just "
                  "before the release is issued. Two bursts per cluster, one per payload:", "",
                  "- **plain** (the targets' burst): each system's own form of a job that runs "
                  "`sleep`. Tessera executes the argv `sleep 3600.NNNNN` directly; a Slurm batch "
                  "job is always a script run by a shell (`sbatch --wrap 'exec sleep "
                  "3600.NNNNN'`). *All processes running*: the last job process's creation time "
                  "in the kernel's records (`/proc/PID/stat` starttime, 10 ms ticks), found by its "
                  "unique argument, the same way on both; for Slurm that is when `slurmstepd` "
                  "forked the job's process, before its shell ran (in Slurm's favour).",
                  "- **shell**: the same shell line on both systems (`: > marker; exec sleep "
                  "3600`). *All first lines ran*: the marker file's mtime. On this VM starting a "
                  "dynamically linked program costs about 1 ms of CPU (glibc's loader probes the "
                  "cache sizes with `cpuid`, which traps to the hypervisor), so this payload's own "
                  "start bounds what any scheduler can do: the *floor* column is the same 1,000 "
                  "processes started by a bare `posix_spawn` loop with no scheduler, in this run.",
                  "",
                  "*All bound*: Tessera, the last task's creation (the bind's commit) in its "
                  "records; Slurm, the first `squeue` poll (every 0.2 s) with no job pending. "
                  "*All started*: Tessera, the last `startedMs` the agent reported (its launcher "
                  "returned: the process exists and has exec'd); Slurm, the first `squeue` poll "
                  "with every job `RUNNING`.", "",
                  "| cluster | jobs | measure | Tessera | Slurm | Slurm / Tessera | target | "
                  "floor (no scheduler) |",
                  "|---|---:|---|---:|---:|---:|---:|---:|"]
        for row in results["burst"]:
            t, sl = row.get("tessera", {}), row.get("slurm", {})
            c = f"{row['nodes']:,} x {row['gpus_per_node']}"
            n = f"{row['jobs']:,}"
            if "error" in sl:
                lines.append(f"| {c} | {n} | Slurm | | did not run: {sl['error']} | | | |")
                sl = {}

            def cell(d, key, digits):
                """The median, and its range over the repeats where there is one."""
                v = d.get(key)
                if v is None:
                    return ""
                text = f"{v:.{digits}f}" if digits is not None else fmt_s(v)
                lo_hi = d.get(key + "_range")
                if lo_hi and lo_hi[0] != lo_hi[1]:
                    lo, hi = (f"{x:.{digits}f}" if digits is not None else fmt_s(x) for x in lo_hi)
                    text += f" ({lo}-{hi})"
                return text

            def line(label, td, tkey, sd, skey, target="", floor=None, bold=False, digits=None):
                tv, sv = td.get(tkey), sd.get(skey)
                r = ratio(tv, sv) if tv is not None and sv is not None else ""
                f = "" if floor is None else cell(floor, "last_s", digits)
                lines.append(f"| {c} | {n} | {label} | {cell(td, tkey, digits)} | "
                             f"{cell(sd, skey, digits)} | "
                             f"{'**' + r + '**' if bold and r else r} | {target} | {f} |")
            tp, sp = t.get("plain", {}), sl.get("plain", {})
            ts, ss = t.get("shell", {}), sl.get("shell", {})
            line("plain: release request, s", tp, "release_request_s", sp, "release_request_s",
                 digits=3)
            line("plain: all bound, s", tp, "bound_s", sp, "bound_s", "20x", bold=True, digits=3)
            line("plain: all started (TaskStarted / RUNNING), s", tp, "started_s",
                 sp, "state_running_s")
            line("plain: **all processes running** (created), s", tp, "running_s", sp,
                 "running_s", "10x", fl.get("plain"), bold=True)
            line("plain: first process running, s", tp, "first_running_s", sp,
                 "first_running_s")
            line("shell: all bound, s", ts, "bound_s", ss, "bound_s", digits=3)
            line("shell: all first lines ran (marker), s", ts, "running_s", ss, "running_s", "",
                 fl.get("shell"), bold=True)
            line("cluster start, s", t, "start_seconds", sl, "start_seconds")
            line("Tessera control plane CPU during the plain burst, s", tp,
                 "control_plane_cpu_s", {}, "")
            if "idle_cpu_fraction" in t:
                lines.append(f"| {c} | | Tessera control plane CPU when idle (heartbeats) | "
                             f"{100 * t['idle_cpu_fraction']:.1f}% of a core | | | | |")
            line("daemons' memory, MiB", t, "rss_mib", sl, "rss_mib", digits=0)
        lines.append("")
    rep = results.get("replay")
    if rep:
        t, sl, sim = rep["tessera"], rep["slurm"], rep["sim"]
        fifo, bf = sim.get("fifo", {}), sim.get("backfill", {})
        lines += ["### Trace replay, three ways", "",
                  f"{rep['jobs']} jobs of `{rep['trace']}` from row {rep['slice_start']} (jobs of "
                  f"1-8 GPUs, or whole 8-GPU nodes), submit times and durations divided by "
                  f"{rep['compress']:.0f} and rounded to whole seconds (at least 1 s), on "
                  f"{rep['nodes']} x {rep['gpus_per_node']} GPUs. Each system's own records: "
                  "Slurm's `jobcomp/filetxt` (whole seconds), Tessera's job records (ms), the "
                  "simulator's summary. Queueing delay: first start - submit. GPU utilisation: "
                  "allocated GPU-seconds / (GPUs x (last finish - first submit)). Slurm jobs ask "
                  "for their duration rounded up to minutes plus one minute (`-t`), which its "
                  "backfill uses; the live Tessera cluster has no run-time estimates, so it runs "
                  "`fifo` and the simulator's matching policy is `fifo`.", "",
                  "| measure | Slurm (backfill) | Tessera live (fifo) | Tessera simulator (fifo) "
                  "| simulator / live | simulator (backfill, oracle) |",
                  "|---|---:|---:|---:|---:|---:|"]

        def row(label, key, pct=False):
            f = (lambda v: "n/a" if v is None else f"{100 * v:.1f}%") if pct else fmt_s
            r = "n/a" if not t.get(key) or fifo.get(key) is None else f"{fifo[key] / t[key]:.3f}"
            lines.append(f"| {label} | {f(sl.get(key))} | {f(t.get(key))} | {f(fifo.get(key))} "
                         f"| {r} | {f(bf.get(key))} |")
        row("mean queueing delay, s", "mean_queue_s")
        row("p95 queueing delay, s", "p95_queue_s")
        row("GPU utilisation", "gpu_utilisation", pct=True)
        row("makespan, s", "makespan_s")
        lines.append(f"| jobs finished (failed) | {sl['jobs']} ({sl['failed']}) | {t['jobs']} "
                     f"({t['failed']}) | {fifo.get('jobs')} | | {bf.get('jobs')} |")
        lines.append(f"| worst submission lateness, s | {fmt_s(sl['submit_lateness_max_s'])} | "
                     f"{fmt_s(t['submit_lateness_max_s'])} | 0 | | 0 |")
        lines.append("")
    lines.append(END)
    return "\n".join(lines) + "\n"


def update_doc(path, section, begin=BEGIN, end=END):
    text = open(path).read() if os.path.exists(path) else ""
    if begin.split(" (")[0] in text and end in text:
        head = text[:text.index(begin.split(" (")[0])]
        tail = text[text.index(end) + len(end):].lstrip("\n")
        text = head + section + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    open(path, "w").write(text)


TWO_BEGIN = ("<!-- bench/run two clocks: begin (generated by bench/run --parts twoclocks from "
             "out/.../results.json; edit the script, not this) -->")
TWO_END = "<!-- bench/run two clocks: end -->"


def within(sim, live, key, count=False):
    """The target: 5 %, or for counts 5 % or 2, whichever is larger."""
    a, b = sim[key], live[key]
    if count:
        return abs(a - b) <= max(2, 0.05 * max(a, b))
    return b != 0 and abs(a / b - 1) <= 0.05


def render_two_clocks(results):
    tc, m = results["two_clocks"], results["machine"]
    sim, live = tc["sim"], tc["live"]
    fails = ", ".join(f"`{node}` at {t} s" for t, node in tc["failures"])
    lines = [TWO_BEGIN, "", "### Two clocks: elastic jobs, leaf-constrained gangs, lost nodes", "",
             f"Run {results['date']} on the development VM ({m['cores']} cores, load average "
             f"{m['load_average'][0]:.1f} at the start and "
             f"{m.get('load_average_end', m['load_average'])[0]:.1f} at the end). "
             f"{tc['jobs']} jobs of `{tc['trace']}` from row {tc['slice_start']} compressed "
             f"{tc['compress']:.0f}x as in the replay above, on {tc['nodes']} nodes x 8 simulated "
             f"H100 in {tc['leaves']} leaves of one spine; {tc['elastic']} gangs elastic "
             f"(minWorkers = half), {tc['leaf_constrained']} with `topology.require: leaf`; "
             f"nodes killed at trace times {fails} (live: the agent's failure drill; "
             "simulator: the same failure file, detected after the live controller's measured "
             "detection time, `--recovery-times measured`). Live: `tessera up --cluster`, "
             "`fifo`, `bestfit`, requeue recovery, heartbeat timeout 10 s; simulator: "
             "`tessera sim --experiment replay` on the same cluster file and policies.", "",
             "| measure | simulator | live | simulator / live | target | met |",
             "|---|---:|---:|---:|---|---|"]

    def row(label, key, count=False):
        a, b = sim[key], live[key]
        r = f"{a / b:.3f}" if b else "n/a"
        target = "within 5 % or 2" if count else "within 5 %"
        v = f"{a:.0f}" if count else f"{a:.2f}"
        w = f"{b:.0f}" if count else f"{b:.2f}"
        lines.append(f"| {label} | {v} | {w} | {r} | {target} | "
                     f"{'yes' if within(sim, live, key, count) else '**no**'} |")
    row("mean queueing delay, s", "mean_queue_s")
    row("allocated GPU-hours", "allocated_gpu_hours")
    row("resizes", "resizes", count=True)
    row("recoveries (restarts after a lost node)", "recoveries", count=True)
    lines.append(f"| jobs finished (live failed) | {sim['jobs']} | {live['jobs']} "
                 f"({live['failed']}) | | | |")
    lines += ["", TWO_END]
    return "\n".join(lines) + "\n"


def render_colocation(doc, results):
    if results.get("colocation_two_clocks"):
        section = colocation_live.render(results["colocation_two_clocks"], results["date"],
                                         results["machine"]["cores"])
        update_doc(doc, section, colocation_live.BEGIN, colocation_live.END)


def main():
    # SIGTERM unwinds like Ctrl-C, so that every cluster's `finally` stops its daemons.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bin-dir", help="where tessera, tesserad and tessera-agent are")
    ap.add_argument("--out", help="results directory")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--parts", default="burst,replay,twoclocks,colocation")
    ap.add_argument("--colocation-hours", type=float, default=24,
                    help="colocation: modelled hours after the warm-up (12 live s each)")
    ap.add_argument("--burst-jobs", type=int, default=1000)
    ap.add_argument("--burst-nodes", default="128,1000")
    ap.add_argument("--burst-repeats", type=int, default=3,
                    help="bursts per system, payload and size; the tables show the medians")
    ap.add_argument("--systems", default="tessera,slurm",
                    help="which systems run the burst (a subset of tessera,slurm)")
    ap.add_argument("--slurm-port", type=int, default=26800)
    ap.add_argument("--trace", default=os.path.join(REPO, "..", "shared", "traces",
                                                    "microsoft-itp-2021", "cluster04.csv"))
    ap.add_argument("--slice-start", type=int, default=2000)
    ap.add_argument("--slice-jobs", type=int, default=500)
    ap.add_argument("--compress", type=float, default=1200)
    ap.add_argument("--replay-nodes", type=int, default=32)
    ap.add_argument("--two-clocks-nodes", type=int, default=32,
                    help="twoclocks: nodes of 8 GPUs, in --two-clocks-leaves leaves of one spine")
    ap.add_argument("--two-clocks-leaves", type=int, default=4)
    ap.add_argument("--doc", help="regenerate the section of this Markdown file")
    ap.add_argument("--render", metavar="RESULTS_JSON", help="only regenerate --doc from a run")
    args = ap.parse_args()
    if args.render:
        results = json.load(open(args.render))
        if results.get("burst") or results.get("replay"):
            update_doc(args.doc, render(results))
        if results.get("two_clocks"):
            update_doc(args.doc, render_two_clocks(results), TWO_BEGIN, TWO_END)
        render_colocation(args.doc, results)
        return
    if not args.bin_dir or not args.out:
        ap.error("--bin-dir and --out are required")
    os.makedirs(args.out, exist_ok=True)
    args.workdir = args.workdir or tempfile.mkdtemp(prefix="bench-")
    results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "machine": machine(), "slurm_gpu_model": GPU_MODEL_NOTE,
               "slurm_version": subprocess.run(["sh", "-c", "slurmctld -V || echo not installed"],
                                               capture_output=True,
                                               text=True).stdout.strip()}
    parts = args.parts.split(",")
    if "burst" in parts:
        systems = args.systems.split(",")
        args.baseline_tasks = int(open("/proc/loadavg").read().split()[3].split("/")[1])
        results["burst_repeats"] = args.burst_repeats
        results["burst_floor"] = summarise([burst_floor(args, args.burst_jobs, rep)
                                            for rep in range(args.burst_repeats)])
        results["burst"] = []
        for nodes in [int(n) for n in args.burst_nodes.split(",")]:
            row = {"nodes": nodes, "gpus_per_node": 8, "jobs": args.burst_jobs}
            runs = {"tessera": [], "slurm": []}
            # The repeats alternate between the systems, so that a change in the machine's
            # background load falls on both.
            for rep in range(args.burst_repeats):
                if "tessera" in systems:
                    runs["tessera"].append(burst_tessera(args, nodes, args.burst_jobs, rep))
                if "slurm" in systems and "error" not in row.get("slurm", {}):
                    try:
                        runs["slurm"].append(burst_slurm(args, nodes, args.burst_jobs, rep))
                    except (RuntimeError, TimeoutError) as e:
                        row["slurm"] = {"error": str(e)}
                        log(f"slurm at {nodes} nodes: {e}")
            for system, r in runs.items():
                if r and "error" not in row.get(system, {}):
                    row[system] = summarise(r)
                    row[system]["runs"] = r
            results["burst"].append(row)
            json.dump(results, open(os.path.join(args.out, "results.json"), "w"), indent=2)
    if "replay" in parts:
        jobs = trace_slice(args)
        rep = {"trace": os.path.relpath(args.trace, REPO), "slice_start": args.slice_start,
               "jobs": len(jobs), "compress": args.compress, "nodes": args.replay_nodes,
               "gpus_per_node": 8}
        write_slice_csv(jobs, os.path.join(args.out, "replay-slice.csv"))
        rep["sim"] = replay_sim(args, jobs)
        rep["tessera"] = replay_tessera(args, jobs)
        rep["slurm"] = replay_slurm(args, jobs)
        results["replay"] = rep
    if "twoclocks" in parts:
        results["two_clocks"] = two_clocks(args)
    if "colocation" in parts:
        results["colocation_two_clocks"] = colocation_live.two_clocks(colocation_live.default_args(
            args.bin_dir, os.path.join(args.out, "colocation"), hours=args.colocation_hours))
    results["machine"]["load_average_end"] = os.getloadavg()
    json.dump(results, open(os.path.join(args.out, "results.json"), "w"), indent=2)
    log(f"results in {args.out}/results.json")
    if args.doc:
        if results.get("burst") or results.get("replay"):
            update_doc(args.doc, render(results))
        if results.get("two_clocks"):
            update_doc(args.doc, render_two_clocks(results), TWO_BEGIN, TWO_END)
        render_colocation(args.doc, results)
        log(f"tables written to {args.doc}")


if __name__ == "__main__":
    main()
