#!/usr/bin/env python3
"""Summarize tools/peers/run.sh's runs: one Markdown table, min / median / max
over the rounds, per peer.

Figures, from /usr/bin/time (user + system CPU of the whole process, max RSS)
and each run's result JSON (total_output_tokens, the vLLM field every peer
writes):
  whole-process CPU per chunk  CPU of the full run / its output tokens
  net CPU per chunk            (CPU full - CPU 1-token run) / (tokens full - tokens 1-token)
  start-up CPU                 CPU of the 1-token run (tokenizer, dataset, one token a request)
  max RSS                      of the full run and of the 1-token run
The simulator sends one token a chunk (it merges tokens only when a reader
falls behind), so a token stands for a chunk.

usage: summarize.py OUT_DIR
"""
import glob
import json
import os
import re
import statistics
import sys


def read_time(path):
    with open(path) as f:
        lines = f.read().split("\n")
    user, sys_, rss, wall = lines[0].split()
    load = lines[1].split() if len(lines) > 1 and lines[1].strip() else []
    return float(user) + float(sys_), int(rss), float(wall), [float(x) for x in load]


def read_tokens(path):
    with open(path) as f:
        return json.load(f)["total_output_tokens"]


def mmm(xs, fmt):
    if not xs:
        return "-"
    return " / ".join(fmt.format(x) for x in (min(xs), statistics.median(xs), max(xs)))


def main(out):
    runs = {}  # (peer, round) -> {outlen: (cpu, rss, wall, load, tokens)}
    for t in glob.glob(os.path.join(out, "run-*.time")):
        m = re.match(r"run-(\w+)-r(\d+)-o(\d+)\.time$", os.path.basename(t))
        if not m:
            continue
        peer, rnd, outlen = m.group(1), int(m.group(2)), int(m.group(3))
        cpu, rss, wall, load = read_time(t)
        tokens = read_tokens(t[: -len(".time")] + ".json")
        runs.setdefault((peer, rnd), {})[outlen] = (cpu, rss, wall, load, tokens)
    peers = []
    for p, _ in sorted(runs):
        if p not in peers:
            peers.append(p)
    order = {"servegate": 0, "rust": 1, "python": 2}
    peers.sort(key=lambda p: order.get(p, 9))
    rows = {
        "whole-process CPU per chunk, µs": [],
        "net CPU per chunk, µs": [],
        "start-up CPU (1-token run), s": [],
        "max RSS, full run, MB": [],
        "max RSS, 1-token run, MB": [],
        "wall time, full run, s": [],
    }
    loads = []
    for p in peers:
        whole, net, start, rss, rss1, wall = [], [], [], [], [], []
        for (peer, _), by in sorted(runs.items()):
            if peer != p or len(by) != 2:
                continue
            (full_len, full), (one_len, one) = sorted(by.items(), reverse=True)
            whole.append(full[0] / full[4] * 1e6)
            if full[4] > one[4]:
                net.append((full[0] - one[0]) / (full[4] - one[4]) * 1e6)
            start.append(one[0])
            rss.append(full[1] / 1024)
            rss1.append(one[1] / 1024)
            wall.append(full[2])
            loads += [x[3][0] for x in (full, one) if x[3]]
        for key, xs, fmt in zip(rows, (whole, net, start, rss, rss1, wall),
                                ("{:.1f}", "{:.1f}", "{:.2f}", "{:.1f}", "{:.1f}", "{:.1f}")):
            rows[key].append(mmm(xs, fmt))
    machine = {}
    path = os.path.join(out, "machine.txt")
    if os.path.exists(path):
        for line in open(path):
            k, _, v = line.strip().partition("=")
            machine[k] = v
    print(f"Peer comparison, {machine.get('date', '?')}, commit {machine.get('commit', '?')}")
    print(f"machine: {machine.get('cpu', '?')}, Linux {machine.get('kernel', '?')}")
    print(f"shape: {machine.get('shape', '?')}")
    if loads:
        print(f"1-minute load average during the runs: {min(loads):.2f} to {max(loads):.2f}")
    rounds = len({r for _, r in runs})
    print(f"rounds: {rounds}, interleaved; min / median / max\n")
    print("| figure | " + " | ".join(peers) + " |")
    print("|---" * (len(peers) + 1) + "|")
    for key, vals in rows.items():
        print(f"| {key} | " + " | ".join(vals) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
