#!/usr/bin/env python3
"""The share-packing limit of the FGD allocation experiment on each openb list (docs/beyond-fgd.md).

At 100% arrived demand the pods that arrived ask for exactly the cluster's GPUs. GPU shares
(one GPU, less than 1000 milli) are packed into GPUs of 1000 milli, and a GPU that holds a share
cannot take a whole-GPU pod. If every arriving share were placed, the GPU milli left free beside
them (1000 x GPUs holding shares - their milli) is unallocated, whatever the policy, so

    allocation at 100% <= 100% - (1000 x B - share milli) / cluster milli,

where B is the fewest GPUs that can hold the shares: a one-dimensional bin-packing problem. B is
bounded from below by the fractional bin-packing LP (Gilmore and Gomory, 1961), solved here by
column generation; the bound is Farley's: n.y / K(y) for the LP's duals y, with K(y) the best
knapsack of GPU capacity, so it is valid however the LP ended. The share counts are the list's,
scaled to the cluster's GPU milli (the expected multiset at 100% demand; the LP's value is
convex in the counts, so the bound holds for the expected waste). It ignores CPU, memory, nodes,
GPU models and arrival order, each of which can only lower what is reachable; and a share that
fails at the end (nothing left fits it) wastes nothing, so it is a limit on the policies'
packing of shares, not a strict bound on the experiment. Also prints the first-fit-decreasing
packing (offline, with every share known in advance) for comparison.

Usage: scripts/openb_share_bound.py [TRACES] > bounds.csv   (TRACES: ../shared/traces)
Standard library only.
"""
import csv
import glob
import os
import sys
from collections import Counter
from fractions import Fraction

CAP = 1000  # milli per GPU


def knapsack(sizes, values):
    """Best sum of values of items (each any number of times) of total size <= CAP."""
    best = [Fraction(0)] * (CAP + 1)
    choice = [None] * (CAP + 1)
    for c in range(1, CAP + 1):
        best[c], choice[c] = best[c - 1], None
        for i, (s, v) in enumerate(zip(sizes, values)):
            if s <= c and best[c - s] + v > best[c]:
                best[c], choice[c] = best[c - s] + v, i
    pattern, c = [0] * len(sizes), CAP
    while c > 0:
        if choice[c] is None:
            c -= 1
        else:
            pattern[choice[c]] += 1
            c -= sizes[choice[c]]
    return best[CAP], pattern


def dual_lp(patterns, counts):
    """max counts.y subject to pattern.y <= 1 for every pattern, y >= 0 (tableau simplex,
    Bland's rule, exact fractions; the slack basis is feasible)."""
    m, n = len(patterns), len(counts)
    rows = [[Fraction(a) for a in p] + [Fraction(int(i == r)) for i in range(m)] + [Fraction(1)]
            for r, p in enumerate(patterns)]
    obj = [-Fraction(c) for c in counts] + [Fraction(0)] * (m + 1)
    basis = [n + r for r in range(m)]
    while True:
        col = next((j for j in range(n + m) if obj[j] < 0), None)
        if col is None:
            break
        ratios = [(rows[r][-1] / rows[r][col], basis[r], r) for r in range(m) if rows[r][col] > 0]
        _, _, r = min(ratios)
        piv = rows[r][col]
        rows[r] = [x / piv for x in rows[r]]
        for k in range(m):
            if k != r and rows[k][col] != 0:
                f = rows[k][col]
                rows[k] = [a - f * b for a, b in zip(rows[k], rows[r])]
        f = obj[col]
        obj = [a - f * b for a, b in zip(obj, rows[r])]
        basis[r] = col
    y = [Fraction(0)] * n
    for r, b in enumerate(basis):
        if b < n:
            y[b] = rows[r][-1]
    return y


def lp_bins(sizes, counts):
    """A lower bound on the GPUs that can hold `counts[i]` shares of `sizes[i]` milli."""
    patterns = [[CAP // s if j == i else 0 for j in range(len(sizes))] for i, s in enumerate(sizes)]
    while True:
        y = dual_lp(patterns, counts)
        k, pattern = knapsack(sizes, y)
        if k <= 1:
            return sum(c * v for c, v in zip(counts, y))
        if pattern in patterns:  # cannot improve further: Farley's bound
            return sum(c * v for c, v in zip(counts, y)) / k
        patterns.append(pattern)


def ffd_bins(items):
    free = []
    for x in sorted(items, reverse=True):
        for i, f in enumerate(free):
            if f >= x:
                free[i] -= x
                break
        else:
            free.append(CAP - x)
    return len(free)


def main():
    traces = (sys.argv[1] if len(sys.argv) > 1 else "../shared/traces") + "/alibaba-openb-2023"
    nodes = list(csv.DictReader(open(os.path.join(traces, "openb_node_list_gpu_node.csv"))))
    capacity = sum(int(n["gpu"]) for n in nodes) * CAP
    print("list,share_limit_lp,share_limit_ffd")
    for path in sorted(glob.glob(os.path.join(traces, "openb_pod_list_*.csv"))):
        name = os.path.basename(path)[len("openb_pod_list_"):-len(".csv")]
        pods = list(csv.DictReader(open(path)))
        demand = sum(int(p["num_gpu"]) * int(p["gpu_milli"]) for p in pods)
        scale = Fraction(capacity, demand)  # copies of each pod at 100% arrived demand
        shares = Counter(int(p["gpu_milli"]) for p in pods
                         if p["num_gpu"] == "1" and int(p["gpu_milli"]) < CAP)
        sizes = sorted(shares)
        counts = [shares[s] * scale for s in sizes]
        share_milli = sum(s * c for s, c in zip(sizes, counts))
        bins = lp_bins(sizes, counts)
        items = [s for s in sizes for _ in range(round(shares[s] * scale))]
        lp = 100 - 100 * float((CAP * bins - share_milli) / capacity)
        ffd = 100 - 100 * (CAP * ffd_bins(items) - sum(items)) / capacity
        print(f"{name},{lp:.2f},{ffd:.2f}")


if __name__ == "__main__":
    main()
