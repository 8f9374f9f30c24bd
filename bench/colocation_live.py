#!/usr/bin/python3
"""The co-location experiment's setup live and time-compressed (issue 17, part 5).

One autoscaled InferenceService of tessera-engine-sim replicas behind tessera-gateway, its load a
daily cycle (trough 0.35 of the peak at 02:00, peak at 14:00) times the Azure LLM conversation
trace's per-minute arrival rate over its mean, as `tessera sim --experiment colocation` models
it; a Poisson stream of one-GPU offline BatchJob tasks offered at `--offline-load` of the
cluster's GPU-time. Two setups on the same 8 simulated GPUs (two emulated nodes of 2 H100 and two
of 2 A100, real processes):

  dedicated  the service on the H100 nodes (its peak, 4 replicas, fills them), offline work on
             the A100 nodes; no co-location.
  colocate   both on any node, tesserad --colocation (oversell `--oversell`): offline work
             soaks idle GPUs and is evicted for replicas, cheapest first.

Time runs `3600 / --hour-seconds` times faster than the modelled day: the autoscaler's
scale-down window (5 minutes), the usage window (10 minutes) and offline run times (exponential,
mean 60 minutes, within [5 minutes, 6 hours]) are compressed alike. Measured, after one
compressed hour of warm-up: GPU allocation (GPUs held by live tasks, oversold shares included,
over the cluster's, sampled every 0.25 s), SLO attainment by time (each second's demand, in
clients, weighted by the share of its requests that met both the TTFT and TBT SLO; a second with
demand and no answer counts as missed) and by request, replica-seconds (running replicas ×
modelled seconds) against static provisioning for the peak (4 replicas all the time),
evictions (JobPreempted of offline tasks).

This is not the simulator's workload replayed: the simulator's fleet draws its own services and
tasks; a like-for-like replay of one drawn workload is not built (docs/colocation.md says what
is missing). Standard library only; run with Debian's /usr/bin/python3. Not run in CI.

  bench/colocation_live.py --bin-dir build --out out/colocation-live [--hour-seconds 10]
"""

import argparse
import csv
import json
import math
import os
import random
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
PEAK_REPLICAS = 4
TARGET_IN_FLIGHT = 2  # per replica: the autoscaler's target; clients = target x wanted replicas
GPUS = 8


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def wait_until(pred, timeout, what, interval=0.2):
    deadline = time.time() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.time() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


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


def minute_load_factors(path):
    """Requests per minute of the Azure trace over their mean (as ReadMinuteLoadFactors)."""
    counts = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            stamp = row["TIMESTAMP"]
            minute = stamp[:16]  # YYYY-MM-DD HH:MM
            counts[minute] = counts.get(minute, 0) + 1
    values = [counts[k] for k in sorted(counts)]
    mean = sum(values) / len(values)
    return [v / mean for v in values]


def diurnal(hour, trough=0.35, peak_hour=14.0):
    return trough + (1 - trough) * (1 + math.cos(2 * math.pi * (hour - peak_hour) / 24)) / 2


class Cluster:
    """tesserad, two agents (H100 and A100 nodes), tessera-gateway; all stopped by stop()."""

    def __init__(self, bin_dir, work, setup, args):
        self.bin, self.dir, self.procs = bin_dir, work, []
        try:
            self.start(setup, args)
        except BaseException:
            self.stop()
            raise

    def start(self, setup, args):
        bin_dir, work = self.bin, self.dir
        hs = args.hour_seconds
        endpoint = os.path.join(work, "endpoint")
        gw_port_file = os.path.join(work, "gateway.port")
        port = free_port()
        self.gateway = f"http://127.0.0.1:{port}"
        cmd = [os.path.join(bin_dir, "tesserad"), "--state", work, "--port", "0",
               "--endpoint-file", endpoint, "--insecure", "--queue-policy", "backfill",
               "--placement-policy", "fgd", "--heartbeat-interval", "0.25",
               "--autoscale-interval-ms", "250", "--gateway", self.gateway,
               "--usage-window", f"{max(1.0, 600 / 3600 * hs):.2f}"]
        if setup == "colocate":
            config = os.path.join(work, "colocation.yaml")
            with open(config, "w") as f:
                f.write(f"colocation:\n  oversell: {args.oversell}\n  online: [InferenceService]\n"
                        "  offline: [BatchJob]\n  evictionCostSeconds: 30\n")
            cmd += ["--colocation", config]
        self.spawn(cmd, "tesserad.log")
        wait_until(lambda: os.path.exists(endpoint) and open(endpoint).read().strip(), 30,
                   "tesserad")
        self.url = open(endpoint).read().strip()
        for name, model in (("on", "H100"), ("off", "A100")):
            self.spawn([os.path.join(bin_dir, "tessera-agent"), "--server", self.url, "--node",
                        name, "--state", os.path.join(work, "agent-" + name), "--simulate-nodes",
                        "2", "--simulate-gpus", f"2x{model}"], f"agent-{name}.log")
        wait_until(lambda: len(self.ready_nodes()) == 4, 60, "4 nodes")
        self.spawn([os.path.join(bin_dir, "tessera-gateway"), "--listen", "127.0.0.1", "--port",
                    str(port), "--server", self.url,
                    "--cold-start-wait-ms", "15000", "--port-file", gw_port_file], "gateway.log")
        wait_until(lambda: http("GET", self.gateway + "/health", timeout=2)[0] == 200, 30,
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


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def service_spec(bin_dir, setup, args):
    models = "  gpuModels: [H100]\n" if setup == "dedicated" else ""
    down = max(1, round(300 / 3600 * args.hour_seconds))
    return ("apiVersion: tessera/v1\nkind: InferenceService\nmetadata: {name: chat}\nspec:\n"
            f"  replicas: {{min: 1, max: {PEAK_REPLICAS}}}\n  gpusPerReplica: 1\n{models}"
            f"  slo: {{ttftMs: {args.slo_ttft_ms}, tbtMs: {args.slo_tbt_ms}}}\n"
            "  gracePeriodSeconds: 1\n"
            f"  autoscaling: {{metric: in-flight-requests, target: {TARGET_IN_FLIGHT}, "
            f"scaleDownStabilizationSeconds: {down}}}\n"
            f"  command: [{json.dumps(os.path.join(bin_dir, 'tessera-engine-sim'))}, --model, chat]\n")


def offline_spec(name, seconds, setup):
    models = ", gpuModels: [A100]" if setup == "dedicated" else ""
    return ("apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name + "}\nspec: "
            "{tasks: 1, gpusPerTask: 1" + models + ", gracePeriodSeconds: 1, shell: true, "
            f"command: [\"exec sleep {seconds:.2f}\"]}}\n")


class Load:
    """Closed-loop clients through the gateway; `wanted` of them active at a time."""

    def __init__(self, gateway, clients, slo_ttft, slo_tbt):
        self.gateway, self.slo_ttft, self.slo_tbt = gateway, slo_ttft / 1000, slo_tbt / 1000
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
                time.sleep(0.05)
                continue
            n += 1
            met = self.one(f"client {i} request {n} " + " ".join(f"w{(i * 7 + k) % 97}"
                                                                  for k in range(48)))
            with self.lock:
                self.done.append((time.time(), met))

    def one(self, prompt):
        body = json.dumps({"model": "chat", "prompt": prompt, "max_tokens": 24,
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


def running_replicas(cluster):
    status, job = http("GET", cluster.url + "/v1/jobs/default/chat", timeout=5)
    if status != 200:
        return 0
    return sum(1 for t in job.get("taskList", [])
               if t.get("state") == "Running" and not t.get("draining", False))


def allocation(cluster):
    nodes = cluster.ready_nodes()
    return sum(n["gpusAllocated"] for n in nodes) / GPUS


def offline_evictions(cluster):
    since, count = 0, 0
    while True:
        status, body = http("GET", cluster.url + f"/v1/events?since={since}&limit=1000", timeout=10)
        events = body.get("events", []) if status == 200 and body else []
        if not events:
            return count
        for e in events:
            if e.get("type") == "JobPreempted" and "co-location" in e.get("message", ""):
                count += 1
        since = events[-1]["seq"]


def run_setup(setup, args, factors):
    hs = args.hour_seconds
    work = tempfile.mkdtemp(prefix=f"tessera-coloc-{setup}-")
    log(f"{setup}: starting in {work}")
    cluster = Cluster(args.bin_dir, work, setup, args)
    rng = random.Random(args.seed)
    load = Load(cluster.gateway, 2 * TARGET_IN_FLIGHT * PEAK_REPLICAS, args.slo_ttft_ms,
                args.slo_tbt_ms)
    try:
        cluster.submit(service_spec(args.bin_dir, setup, args))
        wait_until(lambda: running_replicas(cluster) >= 1, 60, "the first replica")
        # Offline arrivals: Poisson at offline-load of the GPU-time, one-GPU tasks, run times
        # exponential with a 60 min mean within [5 min, 6 h], all compressed.
        mean_run = 3600 / 3600 * hs
        rate = args.offline_load * GPUS / mean_run  # tasks per compressed second
        t0 = time.time()
        total = (args.hours + 1) * hs
        next_arrival, tasks = rng.expovariate(rate), 0
        samples, seconds = [], {}
        demand_by_second = {}
        while True:
            now = time.time() - t0
            if now >= total:
                break
            hour = now / hs - 1 + args.start_hour  # the first hour is warm-up
            minute = int(now / hs * 60)
            level = min(1.0, diurnal(hour) * factors[minute % len(factors)])
            wanted_replicas = max(1, math.ceil(PEAK_REPLICAS * level - 1e-9))
            load.wanted = max(1, round(TARGET_IN_FLIGHT * PEAK_REPLICAS * level))
            while next_arrival <= now:
                run = min(6 * hs, max(5 / 60 * hs, rng.expovariate(1 / mean_run)))
                cluster.submit(offline_spec(f"off-{tasks}", run, setup))
                tasks += 1
                next_arrival += rng.expovariate(rate)
            if now >= hs:
                samples.append((now, allocation(cluster), running_replicas(cluster),
                                wanted_replicas))
                demand_by_second[int(now)] = load.wanted
            time.sleep(0.25)
        load.stop = True
        measured = [s for s in samples if s[0] >= hs]
        dt = (total - hs) / max(1, len(measured))
        scale = 3600 / hs  # modelled seconds per live second
        replica_seconds = sum(s[2] for s in measured) * dt * scale
        static = PEAK_REPLICAS * (total - hs) * scale
        with load.lock:
            done = [d for d in load.done if d[0] - t0 >= hs]
        by_second = {}
        for at, met in done:
            k = int(at - t0)
            ok, n = by_second.get(k, (0, 0))
            by_second[k] = (ok + met, n + 1)
        weighted = served = 0.0
        for k, demand in demand_by_second.items():
            ok, n = by_second.get(k, (0, 0))
            weighted += demand
            served += demand * (ok / n if n else 0.0)
        result = {
            "setup": setup,
            "gpu_allocation_ratio": sum(s[1] for s in measured) / max(1, len(measured)),
            "slo_attainment_time": served / weighted if weighted else None,
            "slo_attainment_requests": (sum(1 for d in done if d[1]) / len(done)) if done else None,
            "requests": len(done),
            "online_replica_seconds": replica_seconds,
            "static_peak_replica_seconds": static,
            "replica_seconds_saved": 1 - replica_seconds / static,
            "offline_tasks_submitted": tasks,
            "evictions": offline_evictions(cluster),
            "samples": len(measured),
        }
        log(f"{setup}: {json.dumps(result)}")
        return result
    finally:
        load.stop = True
        cluster.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin-dir", default=os.path.join(REPO, "build"))
    p.add_argument("--out", default=os.path.join(REPO, "out", "colocation-live"))
    p.add_argument("--setups", default="dedicated,colocate")
    p.add_argument("--hours", type=float, default=24, help="modelled hours after the warm-up")
    p.add_argument("--hour-seconds", type=float, default=10, help="live seconds per hour")
    p.add_argument("--start-hour", type=float, default=0)
    p.add_argument("--oversell", type=float, default=0.5)
    p.add_argument("--offline-load", type=float, default=0.8)
    p.add_argument("--slo-ttft-ms", type=int, default=2000)
    p.add_argument("--slo-tbt-ms", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--load-trace", default=os.path.join(
        REPO, "..", "shared", "traces", "azure-llm-2023", "AzureLLMInferenceTrace_conv.csv"))
    p.add_argument("--keep", action="store_true", help="keep each setup's state and logs")
    args = p.parse_args()
    factors = minute_load_factors(args.load_trace)
    results = [run_setup(s, args, factors) for s in args.setups.split(",")]
    os.makedirs(args.out, exist_ok=True)
    summary = {"experiment": "colocation-live", "gpus": GPUS, "simulated_gpus": True,
               "hour_seconds": args.hour_seconds, "hours": args.hours, "oversell": args.oversell,
               "offline_load": args.offline_load, "seed": args.seed,
               "slo": {"ttft_ms": args.slo_ttft_ms, "tbt_ms": args.slo_tbt_ms},
               "results": results}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
