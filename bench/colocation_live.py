#!/usr/bin/python3
"""Co-location's two clocks (issue 17, part 5): one drawn workload, live and in the simulator.

1. `tessera sim --experiment colocation --workload fleet` draws the experiment's workload on a
   small cluster and writes it (`--write-plan`): the services (one-GPU replicas, the replicas
   each has at its peak, its load per minute: the daily cycle, trough 0.35 at 02:00 and peak at
   14:00, times the Azure LLM conversation trace's per-minute rate over its mean, capped at 1)
   and the offline BatchJob tasks (arrival, run time, GPU share, CPU, memory; Poisson at
   `--offline-load` of the GPU-time, run times exponential, mean 60 min, within [5 min, 6 h]).
   It runs the setups on that plan and writes its summary.json.
2. This script replays exactly that plan live, time-compressed: tesserad, two tessera-agents
   emulating `--online-nodes` one-GPU H100 nodes and `--offline-nodes` one-GPU A100 nodes
   (simulated GPUs, real processes), tessera-gateway; every service an autoscaled
   InferenceService of tessera-engine-sim replicas (in-flight requests per replica, target 2,
   min 1, max its peak; the plan's scale-down window), driven by closed-loop streaming clients
   through the gateway, ceil(2 × max × load) of them in each minute, so that the live
   autoscaler's ceil(in-flight ÷ 2) is the simulator's ceil(max × load); the offline tasks as
   BatchJobs that sleep their run time.
3. The measures of both clocks side by side, with the issue's target: GPU allocation, SLO
   attainment (by time) and replica-seconds within 5 %, evictions within 5 % or 2.

Setups: `dedicated` (services on the H100 nodes, offline work on the A100 nodes; the simulator
with `--dedicated-online-models H100`; the default 5 + 3 nodes give the online pool its peak of
4 GPUs plus 25 %, the whole-GPU rounding of the simulator's peak + 15 %) and `colocate-oversell-F`
(both anywhere, `--colocation` with oversell F, the same file for both clocks but for the
eviction cost, compressed live).

Time runs 3600 / --hour-seconds times faster live: windows, run times and the eviction cost are
compressed alike (the default 12 s per hour makes the 5-minute scale-down window 1 s; tesserad
takes whole seconds). The replicas' used share, which the oversell credit lends against, is the
simulator's load model live too: each replica's usage file (TESSERA_GPU_USAGE_FILE) gets
min(1, max × load × 0.7 ÷ running replicas) from this script (`--usage model`, the default);
`--usage engine` leaves it to tessera-engine-sim's own busy fraction instead. Measured after the
plan's warm-up: GPU allocation (GPUs held by live tasks, oversold shares included, ÷ the
cluster's, integrated over time), SLO attainment by time (each second's demand weighted by the
share of its requests that met both the TTFT and TBT SLO; a second with demand and no answer
counts as missed) and by request, replica-seconds (running replicas × modelled seconds) against
static provisioning for the peak, evictions (JobPreempted of offline tasks by co-location).

Standard library only; run with Debian's /usr/bin/python3. Not run in CI (about 11 minutes with
the defaults: two setups of 25 modelled hours at 12 s each).

  bench/colocation_live.py --bin-dir build --out out/colocation-two-clocks [--hours 24] \
      [--autoscaler hpa|kpa] [--doc docs/benchmarks.md]

`--autoscaler kpa` draws the plan with the simulator's `--autoscaler kpa` and gives the live
service `policy: kpa` with Knative's 60 s stable window compressed (0.2 s at 12 s per hour).
  bench/colocation_live.py --bounds-of out/colocation-two-clocks/plan.json
"""

import argparse
import glob
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TARGET_IN_FLIGHT = 2  # per replica: the live autoscaler's target; clients = 2 x the demand
NODE_CPUS, NODE_MEMORY_GIB = 8, 64


from bench_util import log, wait_until  # noqa: E402


def http(method, url, body=None, timeout=30, content="application/yaml"):
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": content})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, None
    except (urllib.error.URLError, OSError):
        return 0, None  # not listening (yet)


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write_cluster(path, args):
    with open(path, "w") as f:
        f.write("# The two clocks' cluster (bench/colocation_live.py): one-GPU nodes.\npools:\n")
        for name, count, model in (("on", args.online_nodes, "H100"),
                                   ("off", args.offline_nodes, "A100")):
            f.write(f"  - {{name: {name}, count: {count}, gpus: 1, model: {model}, "
                    f"cpuCores: {NODE_CPUS}, memoryGiB: {NODE_MEMORY_GIB}}}\n")


def write_colocation(path, oversell, eviction_cost_seconds):
    with open(path, "w") as f:
        f.write(f"colocation:\n  oversell: {oversell}\n  online: [InferenceService]\n"
                f"  offline: [BatchJob]\n  evictionCostSeconds: {eviction_cost_seconds:g}\n")


def run_sim(args, work):
    """Draws the plan and runs the simulator's setups on it; returns (plan, {setup: result})."""
    cluster = os.path.join(work, "cluster.yaml")
    write_cluster(cluster, args)
    colocation = os.path.join(work, "colocation-sim.yaml")
    write_colocation(colocation, args.oversell, 30)
    plan_path = os.path.join(args.out, "plan.json")
    out = os.path.join(work, "sim")
    cmd = [os.path.join(args.bin_dir, "tessera"), "sim", "--experiment", "colocation",
           "--workload", "fleet", "--cluster", cluster, "--placement", "fgd",
           "--hours", f"{args.hours:g}", "--load-trace", args.load_trace,
           "--setups", "dedicated,colocate", "--colocation", colocation,
           "--dedicated-online-models", "H100", "--offline-load", f"{args.offline_load:g}",
           "--autoscaler", args.autoscaler, "--seed", str(args.seed), "--write-plan", plan_path, "--out", out]
    log("simulator: " + " ".join(cmd))
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    summary = json.load(open(os.path.join(out, "summary.json")))
    runs = {}
    for r in summary["results"]:
        runs[r["policy"]] = {
            "gpu_allocation_ratio": r["gpu_allocation_ratio"],
            "slo_attainment_time": r["slo_attainment"],
            "online_replica_seconds": r["online_replica_seconds"],
            "static_peak_replica_seconds": r["static_peak_replica_seconds"],
            "replica_seconds_saved": 1 - r["online_replica_seconds"]
            / r["static_peak_replica_seconds"],
            "evictions": r["evictions"],
            "evictions_for_online": r["evictions_for_online"],
            "evictions_for_credit": r["evictions_for_credit"],
            "offline_tasks_submitted": r["offline_tasks_submitted"],
            "offline_tasks_done": r["offline_tasks_done"],
            "online_replica_starts": r["online_replica_starts"]}
    shutil.copy(os.path.join(out, "summary.json"), os.path.join(args.out, "sim-summary.json"))
    return json.load(open(plan_path)), runs


class Cluster:
    """tesserad, two agents (H100 and A100 nodes), tessera-gateway; all stopped by stop()."""

    def __init__(self, work, setup, oversell, plan, args):
        self.bin, self.dir, self.procs, self.args = args.bin_dir, work, [], args
        self.gpus = args.online_nodes + args.offline_nodes
        try:
            self.start(setup, oversell, plan)
        except BaseException:
            self.stop()
            raise

    def start(self, setup, oversell, plan):
        bin_dir, work, compress = self.bin, self.dir, self.args.hour_seconds / 3600
        endpoint = os.path.join(work, "endpoint")
        port = free_port()
        self.gateway = f"http://127.0.0.1:{port}"
        step = plan["stepSeconds"] * compress  # one modelled minute: heartbeats and autoscaler
        cmd = [os.path.join(bin_dir, "tesserad"), "--state", work, "--port", "0",
               "--endpoint-file", endpoint, "--insecure", "--queue-policy", "backfill",
               "--placement-policy", "fgd", "--heartbeat-interval", f"{step:.3f}",
               "--autoscale-interval-ms", str(round(step * 1000)), "--gateway", self.gateway,
               # A replica scaled in leaves at the next step, as in the simulator (whose step
               # frees it at once), not after a second (5 modelled minutes here).
               "--drain-min-ms", str(round(step * 1000)),
               "--usage-window", f"{plan['usageWindowSeconds'] * compress:.3f}"]
        if setup != "dedicated":
            config = os.path.join(work, "colocation.yaml")
            write_colocation(config, oversell, 30 * compress)
            cmd += ["--colocation", config]
        self.spawn(cmd, "tesserad.log")
        wait_until(lambda: os.path.exists(endpoint) and open(endpoint).read().strip(), 30, 0.2,
                   "tesserad")
        self.url = open(endpoint).read().strip()
        for name, count, model in (("on", self.args.online_nodes, "H100"),
                                   ("off", self.args.offline_nodes, "A100")):
            self.spawn([os.path.join(bin_dir, "tessera-agent"), "--server", self.url, "--node",
                        name, "--state", os.path.join(work, "agent-" + name), "--simulate-nodes",
                        str(count), "--simulate-gpus", f"1x{model}", "--cpus", str(NODE_CPUS),
                        "--memory-mib", str(NODE_MEMORY_GIB * 1024)], f"agent-{name}.log")
        wait_until(lambda: len(self.ready_nodes()) == self.gpus, 60, 0.2, f"{self.gpus} nodes")
        self.spawn([os.path.join(bin_dir, "tessera-gateway"), "--listen", "127.0.0.1", "--port",
                    str(port), "--server", self.url, "--cold-start-wait-ms", "15000",
                    "--port-file", os.path.join(work, "gateway.port")], "gateway.log")
        wait_until(lambda: http("GET", self.gateway + "/health", timeout=2)[0] == 200, 30, 0.2,
                   "tessera-gateway")

    def spawn(self, cmd, logname):
        self.procs.append(subprocess.Popen(cmd, stdout=open(os.path.join(self.dir, logname), "w"),
                                           stderr=subprocess.STDOUT, start_new_session=True))

    def ready_nodes(self):
        status, body = http("GET", self.url + "/v1/nodes", timeout=5)
        if status != 200:
            return []
        return [n for n in body["nodes"] if n["status"] == "Ready"]

    def submit(self, spec):
        status, _ = http("POST", self.url + "/v1/jobs", spec)
        if status != 201:
            raise RuntimeError(f"submission refused ({status}): {spec}")

    def last_event_seq(self):
        since = 0
        while True:
            status, body = http("GET", self.url + f"/v1/events?since={since}&limit=1000",
                                timeout=10)
            events = body.get("events", []) if status == 200 and body else []
            if not events:
                return since
            since = events[-1]["seq"]

    def evictions_since(self, since):
        """(evictions for an online replica, for credit taken back) after event `since`."""
        online = credit = 0
        while True:
            status, body = http("GET", self.url + f"/v1/events?since={since}&limit=1000",
                                timeout=10)
            events = body.get("events", []) if status == 200 and body else []
            if not events:
                return online, credit
            for e in events:
                message = e.get("message", "")
                if e.get("type") != "JobPreempted" or "co-location" not in message:
                    continue
                if "took back" in message:
                    credit += 1
                else:
                    online += 1
            since = events[-1]["seq"]

    def stop(self):
        # tesserad first, so that it starts nothing new; the agents stop their tasks on SIGTERM.
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def shape_fields(item, setup, model):
    """gpus, cpu, memory and (dedicated) the pool's GPU model of a plan entry, as spec YAML."""
    gpus = item["gpus"] if item["gpuMilli"] == 1000 else f"\"{item['gpuMilli'] / 1000:g}\""
    models = f", gpuModels: [{model}]" if setup == "dedicated" else ""
    return gpus, f"cpu: {item['cpuMilli']}m, memory: {item['memoryMib']}Mi{models}"


def service_spec(svc, setup, plan, args, usage_dir):
    gpus, rest = shape_fields(svc, setup, "H100")
    compress = args.hour_seconds / 3600
    down = plan["scaleDownWindowSeconds"] * compress
    engine = os.path.join(args.bin_dir, "tessera-engine-sim")
    name = svc["name"]
    if args.usage == "model":
        # The replica's usage file is this script's to write (the simulator's load model); the
        # engine gets none, so that it does not overwrite it.
        run = (f"echo \"$TESSERA_GPU_USAGE_FILE\" > {usage_dir}/{name}.$$; exec env -u "
               f"TESSERA_GPU_USAGE_FILE {engine} --model {name}")
    else:
        run = f"exec {engine} --model {name}"
    return ("apiVersion: tessera/v1\nkind: InferenceService\nmetadata: {name: " + name + "}\n"
            f"spec:\n  replicas: {{min: 1, max: {svc['maxReplicas']}}}\n"
            f"  gpusPerReplica: {gpus}\n  {rest.replace(', ', chr(10) + '  ')}\n"
            f"  slo: {{ttftMs: {args.slo_ttft_ms}, tbtMs: {args.slo_tbt_ms}}}\n"
            "  gracePeriodSeconds: 1\n"
            f"  autoscaling: {{{policy_fields(plan, compress)}metric: in-flight-requests, "
            f"target: {TARGET_IN_FLIGHT}, scaleDownStabilizationSeconds: {round(down)}}}\n"
            f"  shell: true\n  command: [{json.dumps(run)}]\n")


def policy_fields(plan, compress):
    """The plan's autoscaler policy as spec fields; kpa's stable window (Knative's 60 s, in the
    simulator too) compressed like every other window."""
    if plan.get("autoscalePolicy", "hpa") != "kpa":
        return ""
    return f"policy: kpa, stableWindowSeconds: {60 * compress:.3f}, "


def offline_spec(name, task, seconds, setup):
    gpus, rest = shape_fields(task, setup, "A100")
    return ("apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name + "}\nspec: "
            f"{{tasks: 1, gpusPerTask: {gpus}, {rest}, gracePeriodSeconds: 1, shell: true, "
            f"command: [\"exec sleep {seconds:.3f}\"]}}\n")


class Load:
    """Closed-loop streaming clients of one service through the gateway; `wanted` active."""

    def __init__(self, gateway, model, clients, slo_ttft, slo_tbt):
        self.gateway, self.model = gateway, model
        self.slo_ttft, self.slo_tbt = slo_ttft / 1000, slo_tbt / 1000
        self.wanted = 0
        self.stop = False
        self.lock = threading.Lock()
        self.done = []  # (finish time, met SLO)
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(clients)]
        for t in self.threads:
            t.start()

    def run(self, i):
        n = 0
        while not self.stop:
            if i >= self.wanted:
                time.sleep(0.02)
                continue
            n += 1
            met = self.one(f"client {i} request {n} " + " ".join(f"w{(i * 7 + k) % 97}"
                                                                  for k in range(48)))
            with self.lock:
                self.done.append((time.time(), met))

    def one(self, prompt):
        body = json.dumps({"model": self.model, "prompt": prompt, "max_tokens": 24,
                           "stream": True}).encode()
        req = urllib.request.Request(self.gateway + "/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        start = time.time()
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                last, ttft, worst_gap = None, None, 0.0
                for line in r:
                    if not line.startswith(b"data:") or line.strip() == b"data: [DONE]":
                        continue
                    now = time.time()
                    if ttft is None:
                        ttft = now - start
                    else:
                        worst_gap = max(worst_gap, now - last)
                    last = now
                return ttft is not None and ttft <= self.slo_ttft and worst_gap <= self.slo_tbt
        except (urllib.error.URLError, OSError, ValueError):
            return False


def running_replicas(cluster, name):
    status, job = http("GET", cluster.url + f"/v1/jobs/default/{name}", timeout=5)
    if status != 200:
        return 0
    return sum(1 for t in job.get("taskList", [])
               if t.get("state") == "Running" and not t.get("draining", False))


def allocation(cluster):
    """GPUs held ÷ the cluster's, oversold shares included (as the simulator counts them)."""
    return sum(n["gpusAllocated"] + n.get("oversold", 0)
               for n in cluster.ready_nodes()) / cluster.gpus


def write_usage(usage_dir, name, share):
    """The load model's use into every live replica's usage file of service `name`."""
    for reg in glob.glob(os.path.join(usage_dir, name + ".*")):
        pid = int(reg.rsplit(".", 1)[1])
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            os.remove(reg)  # the replica ended
            continue
        except PermissionError:
            pass
        path = open(reg).read().strip()
        if not path:
            continue
        tmp = path + ".bench"
        try:
            with open(tmp, "w") as f:
                json.dump({"utilization": round(share, 4)}, f)
            os.replace(tmp, path)
        except OSError:
            pass  # the agent removed its usage directory: the task is gone


class Replay:
    """One setup of the plan, live; run() returns its measures."""

    def __init__(self, setup, oversell, plan, args):
        self.setup, self.oversell, self.plan, self.args = setup, oversell, plan, args
        self.compress = args.hour_seconds / 3600  # live seconds per modelled second
        self.step_live = plan["stepSeconds"] * self.compress
        self.warmup_live = plan["warmupSeconds"] * self.compress
        self.end_live = self.warmup_live + plan["horizonSeconds"] * self.compress

    def demand(self, svc, k):
        return svc["maxReplicas"] * svc["load"][min(k, len(svc["load"]) - 1)]

    def run(self):
        work = tempfile.mkdtemp(prefix=f"tessera-coloc-{self.setup}-")
        usage_dir = os.path.join(work, "usage-registry")
        os.makedirs(usage_dir)
        log(f"{self.setup}: starting in {work}")
        cluster = Cluster(work, self.setup, self.oversell, self.plan, self.args)
        services = self.plan["services"]
        loads = [Load(cluster.gateway, s["name"], TARGET_IN_FLIGHT * s["maxReplicas"],
                      self.args.slo_ttft_ms, self.args.slo_tbt_ms) for s in services]
        try:
            for s in services:
                cluster.submit(service_spec(s, self.setup, self.plan, self.args, usage_dir))
            try:
                wait_until(lambda: all(running_replicas(cluster, s["name"]) >= 1
                                       for s in services), 60, 0.2, "the first replicas")
            except TimeoutError:
                for s in services:
                    job = http("GET", cluster.url + "/v1/jobs/default/" + s["name"])
                    log(f"{s['name']}: {job}")
                raise
            return self.drive(cluster, services, loads, usage_dir)
        finally:
            for load in loads:
                load.stop = True
            cluster.stop()
            if not self.args.keep:
                shutil.rmtree(work, ignore_errors=True)
            else:
                log(f"{self.setup}: kept {work}")

    def drive(self, cluster, services, loads, usage_dir):
        plan, offline = self.plan, self.plan["offline"]
        next_task, submitted_measured = 0, 0
        replica_live_s = alloc_live_s = measured_s = 0.0
        demand_by_second = {}  # (second, service) -> demand in GPUs
        eviction_seq = None
        t0 = time.time()
        last = None
        while True:
            now = time.time() - t0
            if now >= self.end_live:
                break
            k = int(now / self.step_live)
            for s, load in zip(services, loads):
                load.wanted = math.ceil(TARGET_IN_FLIGHT * self.demand(s, k) - 1e-9)
            while (next_task < len(offline) and
                   (offline[next_task]["submitSeconds"] + plan["warmupSeconds"]) * self.compress
                   <= now):
                task = offline[next_task]
                cluster.submit(offline_spec(f"off-{next_task}", task,
                                            task["durationSeconds"] * self.compress, self.setup))
                submitted_measured += task["submitSeconds"] >= 0
                next_task += 1
            running = {s["name"]: running_replicas(cluster, s["name"]) for s in services}
            if self.args.usage == "model":
                for s in services:
                    n = running[s["name"]]
                    share = min(1.0, self.demand(s, k) * plan["targetUtilisation"] / n) if n else 0
                    write_usage(usage_dir, s["name"], share)
            measured = now >= self.warmup_live
            if measured and eviction_seq is None:
                eviction_seq = cluster.last_event_seq()
            alloc = allocation(cluster) if measured else 0
            # Each sample holds until the next one (the time between them is what it stood for).
            if last is not None and last[0] >= self.warmup_live:
                dt = now - last[0]
                measured_s += dt
                replica_live_s += last[1] * dt
                alloc_live_s += last[2] * dt
            if measured:
                for s in services:
                    demand_by_second[(int(now), s["name"])] = self.demand(s, k) * s["gpus"]
            last = (now, sum(running.values()), alloc)
            time.sleep(max(0.0, 0.05 - (time.time() - t0 - now)))
        for load in loads:
            load.stop = True
        for_online, for_credit = cluster.evictions_since(eviction_seq or 0)
        by_second = {}
        done_all = []
        for s, load in zip(services, loads):
            with load.lock:
                done = [d for d in load.done if d[0] - t0 >= self.warmup_live]
            done_all += done
            for at, met in done:
                key = (int(at - t0), s["name"])
                ok, n = by_second.get(key, (0, 0))
                by_second[key] = (ok + met, n + 1)
        weighted = served = 0.0
        for key, demand in demand_by_second.items():
            ok, n = by_second.get(key, (0, 0))
            weighted += demand
            served += demand * (ok / n if n else 0.0)
        scale = 1 / self.compress  # modelled seconds per live second
        static = sum(s["maxReplicas"] for s in services) * plan["horizonSeconds"]
        result = {
            "setup": self.setup if self.setup == "dedicated"
            else f"colocate-oversell-{self.oversell:g}",
            "gpu_allocation_ratio": alloc_live_s / measured_s if measured_s else None,
            "slo_attainment_time": served / weighted if weighted else None,
            "slo_attainment_requests": (sum(1 for d in done_all if d[1]) / len(done_all))
            if done_all else None,
            "requests": len(done_all),
            "online_replica_seconds": replica_live_s * scale,
            "static_peak_replica_seconds": static,
            "replica_seconds_saved": 1 - replica_live_s * scale / static,
            "offline_tasks_submitted": submitted_measured,
            "evictions": for_online + for_credit,
            "evictions_for_online": for_online,
            "evictions_for_credit": for_credit,
            "measured_live_seconds": measured_s,
        }
        log(f"{self.setup}: {json.dumps(result)}")
        return result


def autoscale_bounds(plan, windows=(1, 5)):
    """What any autoscaler could save against static provisioning for the peak, on the plan's
    measured steps: fluid (replicas follow max x load exactly: 1 - mean/peak), whole replicas
    (max(1, ceil(max x load))), and whole replicas held for the scale-down window (the most
    wanted over the last `w` steps, as HPA's stabilisation)."""
    first = round(plan["warmupSeconds"] / plan["stepSeconds"])
    steps = round(plan["horizonSeconds"] / plan["stepSeconds"])
    peak = sum(s["maxReplicas"] for s in plan["services"]) * steps
    fluid = whole = 0.0
    held = {w: 0.0 for w in windows}
    for s in plan["services"]:
        want = [max(1, math.ceil(s["maxReplicas"] * x - 1e-9)) for x in s["load"]]
        for k in range(first, first + steps):
            fluid += s["maxReplicas"] * s["load"][k]
            whole += want[k]
            for w in windows:
                held[w] += max(want[max(0, k - w + 1):k + 1])
    out = {"fluid": 1 - fluid / peak, "whole_replicas": 1 - whole / peak}
    for w in windows:
        out[f"whole_replicas_window_{w}_steps"] = 1 - held[w] / peak
    return out


def within(sim, live, key, count=False):
    """The issue's target: 5 %, or for counts 5 % or 2, whichever is larger."""
    a, b = sim.get(key), live.get(key)
    if a is None or b is None:
        return False
    if count:
        return abs(a - b) <= max(2, 0.05 * max(a, b))
    return b != 0 and abs(a / b - 1) <= 0.05


MEASURES = [("GPU allocation", "gpu_allocation_ratio", False),
            ("SLO attainment (time)", "slo_attainment_time", False),
            ("online replica-seconds", "online_replica_seconds", False),
            ("evictions", "evictions", True)]


def comparison(sim_runs, live_runs):
    rows = []
    for live in live_runs:
        sim = sim_runs[live["setup"]]
        for label, key, count in MEASURES:
            a, b = sim.get(key), live.get(key)
            rows.append({"setup": live["setup"], "measure": label, "key": key, "sim": a,
                         "live": b, "ratio": (a / b) if a is not None and b else None,
                         "within": within(sim, live, key, count)})
    return rows


def print_comparison(rows):
    print(f"{'setup':<22} {'measure':<24} {'simulator':>12} {'live':>12} {'sim/live':>9}  met")
    for r in rows:
        fmt = (lambda v: f"{v:.0f}") if r["key"] in ("evictions", "online_replica_seconds") \
            else (lambda v: f"{v:.4f}")
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "n/a"
        print(f"{r['setup']:<22} {r['measure']:<24} {fmt(r['sim']):>12} {fmt(r['live']):>12} "
              f"{ratio:>9}  {'yes' if r['within'] else 'NO'}")


def two_clocks(args):
    """Draws the plan, runs the simulator and the live replays; returns the results dict."""
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="tessera-coloc-sim-")
    try:
        start_load = os.getloadavg()
        plan, sim_runs = run_sim(args, work)
        log(f"plan: {len(plan['services'])} services "
            f"({plan['onlinePeakGpus']:g} simulated GPUs at peak), {len(plan['offline'])} offline "
            "tasks")
        live_runs = []
        for setup in args.setups.split(","):
            live_runs.append(Replay(setup, args.oversell, plan, args).run())
        rows = comparison(sim_runs, live_runs)
        results = {"experiment": "colocation-two-clocks", "simulated_gpus": True,
                   "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "gpus": args.online_nodes + args.offline_nodes,
                   "online_nodes": args.online_nodes, "offline_nodes": args.offline_nodes,
                   "hour_seconds": args.hour_seconds, "hours": args.hours,
                   "oversell": args.oversell, "offline_load": args.offline_load,
                   "seed": args.seed, "usage": args.usage,
                   "slo": {"ttft_ms": args.slo_ttft_ms, "tbt_ms": args.slo_tbt_ms},
                   "services": [{"name": s["name"], "max_replicas": s["maxReplicas"],
                                 "gpus": s["gpus"]} for s in plan["services"]],
                   "offline_tasks": len(plan["offline"]),
                   "autoscale_bounds": autoscale_bounds(plan),
                   "load_average": {"start": start_load, "end": os.getloadavg()},
                   "sim": sim_runs, "live": live_runs, "comparison": rows}
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(results, f, indent=2)
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)


BEGIN = ("<!-- bench/run co-location two clocks: begin (generated by bench/run --parts "
         "colocation from out/.../results.json; edit bench/colocation_live.py, not this) -->")
END = "<!-- bench/run co-location two clocks: end -->"


def evictions(r):
    """'total (for a replica + for credit)'."""
    if "evictions_for_online" not in r:
        return str(r["evictions"])
    return f"{r['evictions']} ({r['evictions_for_online']} + {r['evictions_for_credit']})"


def render(results, date, cores):
    """The docs/benchmarks.md section of a two_clocks() result."""
    la = results["load_average"]
    svc = ", ".join(f"{s['name']} (1–{s['max_replicas']} replicas)" for s in results["services"])
    lines = [BEGIN, "", "### Two clocks: co-location (online services, offline batch work)", "",
             f"Run {date} on the development VM ({cores} cores, load average "
             f"{la['start'][0]:.1f} at the start and {la['end'][0]:.1f} at the end). One plan "
             f"drawn by `tessera sim --experiment colocation --workload fleet --write-plan` "
             f"(seed {results['seed']}) on {results['gpus']} one-GPU nodes, simulated "
             f"({results['online_nodes']} H100, {results['offline_nodes']} A100): {svc}, "
             f"{results['offline_tasks']} offline tasks at {results['offline_load']:g} of the "
             f"GPU-time; {results['hours']:g} h after a 1 h warm-up, replayed live at "
             f"{results['hour_seconds']:g} s per modelled hour (`bench/colocation_live.py`; "
             f"replicas' used share from the load model: `--usage {results['usage']}`).", "",
             "| setup | measure | simulator | live | simulator / live | target | met |",
             "|---|---|---:|---:|---:|---|---|"]
    for r in results["comparison"]:
        count = r["key"] == "evictions"
        if r["key"] in ("evictions", "online_replica_seconds"):
            v, w = f"{r['sim']:,.0f}", f"{r['live']:,.0f}"
        else:
            v, w = f"{100 * r['sim']:.2f} %", f"{100 * r['live']:.2f} %"
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "n/a"
        lines.append(f"| {r['setup']} | {r['measure']} | {v} | {w} | {ratio} | "
                     f"{'within 5 % or 2' if count else 'within 5 %'} | "
                     f"{'yes' if r['within'] else '**no**'} |")
    lines.append("")
    lines.append("| setup | clock | GPU allocation | SLO attainment (time / requests) | "
                 "replica-seconds saved vs static peak | evictions (for a replica + credit) |")
    lines.append("|---|---|---:|---:|---:|---:|")
    for live in results["live"]:
        sim = results["sim"][live["setup"]]
        lines.append(f"| {live['setup']} | simulator | {100 * sim['gpu_allocation_ratio']:.1f} % "
                     f"| {100 * sim['slo_attainment_time']:.2f} % / – | "
                     f"{100 * sim['replica_seconds_saved']:.1f} % | {evictions(sim)} |")
        req = live["slo_attainment_requests"]
        lines.append(f"| {live['setup']} | live | {100 * live['gpu_allocation_ratio']:.1f} % | "
                     f"{100 * live['slo_attainment_time']:.2f} % / "
                     f"{100 * req:.2f} % | {100 * live['replica_seconds_saved']:.1f} % | "
                     f"{evictions(live)} |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def add_arguments(p):
    p.add_argument("--setups", default="dedicated,colocate")
    p.add_argument("--hours", type=float, default=24, help="modelled hours after the warm-up")
    p.add_argument("--hour-seconds", type=float, default=12, help="live seconds per hour")
    p.add_argument("--online-nodes", type=int, default=5, help="one-GPU H100 nodes")
    p.add_argument("--offline-nodes", type=int, default=3, help="one-GPU A100 nodes")
    p.add_argument("--oversell", type=float, default=0.5)
    p.add_argument("--offline-load", type=float, default=0.8)
    p.add_argument("--usage", choices=("model", "engine"), default="model",
                   help="replicas' used share: the simulator's load model, or the engine's")
    p.add_argument("--slo-ttft-ms", type=int, default=2000)
    p.add_argument("--slo-tbt-ms", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--autoscaler", choices=("hpa", "kpa"), default="hpa",
                   help="the autoscaler's policy in both clocks (docs/autoscaling.md)")
    p.add_argument("--load-trace", default=os.path.join(
        REPO, "..", "shared", "traces", "azure-llm-2023", "AzureLLMInferenceTrace_conv.csv"))
    p.add_argument("--keep", action="store_true", help="keep each setup's state and logs")


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin-dir", default=os.path.join(REPO, "build"))
    p.add_argument("--out", default=os.path.join(REPO, "out", "colocation-two-clocks"))
    p.add_argument("--doc", help="regenerate this Markdown file's section (docs/benchmarks.md)")
    p.add_argument("--render", metavar="SUMMARY_JSON",
                   help="only regenerate --doc from a run's summary.json")
    p.add_argument("--bounds-of", metavar="PLAN",
                   help="only print what any autoscaler could save on this plan file")
    add_arguments(p)
    return p


def default_args(bin_dir, out, **overrides):
    """The defaults, for bench/run (side_by_side.py --parts colocation)."""
    args = parser().parse_args([])
    args.bin_dir, args.out = os.path.abspath(bin_dir), out
    for k, v in overrides.items():
        setattr(args, k, v)
    return args


def main():
    p = parser()
    args = p.parse_args()
    if args.bounds_of:
        print(json.dumps(autoscale_bounds(json.load(open(args.bounds_of))), indent=2))
        return
    args.bin_dir = os.path.abspath(args.bin_dir)
    window = 300 * args.hour_seconds / 3600
    if abs(window - round(window)) > 1e-9 or round(window) < 1:
        p.error("--hour-seconds: the 5-minute scale-down window must be whole live seconds "
                "(tesserad takes whole seconds): use a multiple of 12")
    if args.render:
        return write_doc(args.doc, json.load(open(args.render)))
    results = two_clocks(args)
    print_comparison(results["comparison"])
    print(f"summary: {os.path.join(args.out, 'summary.json')}")
    if args.doc:
        write_doc(args.doc, results)


def write_doc(doc, results):
    import side_by_side  # its section writer; it imports this module, so not at the top
    section = render(results, results.get("date", "(date not recorded)"), os.cpu_count())
    side_by_side.update_doc(doc, section, BEGIN, END)
    log(f"section written to {doc}")


if __name__ == "__main__":
    main()
