#!/usr/bin/env python3
"""Generate the golden files of the metrics package with numpy.

Run once from this directory (the Go tests need no Python):

    /tmp/pyvenv/bin/python gen_golden.py

It writes

  records.json   a fixed set of per-request records (integer nanoseconds),
  expected.json  for each option set, every metric value computed with
                 numpy the way vllm bench serve's calculate_metrics and
                 calculate_metrics_for_embeddings compute them,
  result_*.json  the result file vllm bench serve would write for those
                 records (json.dump with Python's defaults), plain and
                 --save-detailed (plus servegate's start_times/latencies).

The math below is written from the behaviour of vLLM's benchmark (mean,
median, population std and linear percentiles from numpy, TPOT from latency
minus TTFT over output tokens minus one, goodput against SLOs in ms, peak
output tokens and concurrency from one-second buckets). It is an independent
restatement, not a copy.
"""

import json
import math

import numpy as np

NS = 1e9


def make_records(rng, n):
    kinds = ["http_status", "stream_error", "timeout", "transport", "canceled"]
    texts = ["Hello", " café ☕", " \"quoted\"\n", "🥐 croissant", "tab\there", "plain"]
    recs = []
    t = 0
    for i in range(n):
        t += int(rng.exponential(0.05) * NS)
        sched = t
        dispatched = sched + int(rng.integers(0, 200_000))
        start = dispatched + int(rng.choice([0, 0, 0, rng.integers(0, 30_000_000)]))
        rec = {
            "request_id": f"bench-golden-{i}",
            "scheduled": sched,
            "dispatched": dispatched,
            "start": start,
            "prompt_len": int(rng.integers(5, 900)),
            "server_prompt_tokens": 0,
            "ttft": 0,
            "itl": [],
            "latency": 0,
            "output_tokens": 0,
            "generated_text": "",
            "success": True,
            "failure": "",
            "error": "",
            "http_status": 200,
            "unsent": False,
            "chunk_tokens": None,
        }
        r = rng.random()
        if r < 0.08:
            kind = kinds[i % len(kinds)]
            rec.update(success=False, failure=kind,
                       error=f"{kind} failure #{i}: \"boom\"\nline2",
                       http_status=500 if kind == "http_status" else 0)
            if kind == "canceled" and i % 2 == 0:
                rec["unsent"] = True
            recs.append(rec)
            continue
        out = int(rng.choice([1, 2, 5, 17, 64, 128, int(rng.integers(1, 300))]))
        ttft = int(rng.lognormal(-2.5, 0.7) * NS)
        chunks = out if rng.random() < 0.8 else max(1, out // 2)
        itl = [int(rng.gamma(2.0, 0.01) * NS) for _ in range(chunks - 1)]
        rec.update(ttft=ttft, itl=itl, latency=ttft + sum(itl),
                   output_tokens=out,
                   generated_text="".join(texts[(i + k) % len(texts)] for k in range(3)))
        if rng.random() < 0.5:
            rec["server_prompt_tokens"] = rec["prompt_len"] + 7
        if chunks != out and i % 3 == 0:
            # per-chunk usage: spread the tokens over the chunks
            base = [out // chunks] * chunks
            for k in range(out - sum(base)):
                base[k] += 1
            rec["chunk_tokens"] = base
        recs.append(rec)
    return recs


def sec(ns):
    return ns / NS


def stats(xs, pcts):
    xs = xs or 0
    return {
        "mean": np.mean(xs) * 1000,
        "median": np.median(xs) * 1000,
        "std": np.std(xs) * 1000,
        "p": [(p, np.percentile(xs, p) * 1000) for p in pcts],
    }


def pword(p):
    return str(int(p)) if int(p) == p else str(p)


def summarize(recs, dur_ns, opts):
    """Every metric as servegate's Summary.Value names it."""
    pooling = opts.get("pooling", False)
    pcts = opts.get("percentiles", [99])
    goodput = opts.get("goodput", {})
    dur = sec(dur_ns)
    sent = [r for r in recs if not r["unsent"]]
    ok = [r for r in sent if r["success"]]
    failed = [r for r in sent if not r["success"]]
    out = {}
    ttfts, tpots, all_tpots, itls, e2els = [], [], [], [], []
    total_in = total_out = 0
    for r in ok:
        lat = sec(r["latency"])
        e2els.append(lat)
        if pooling:
            total_in += r["server_prompt_tokens"]
            continue
        n = r["output_tokens"]
        total_out += n
        total_in += r["prompt_len"]
        ttft = sec(r["ttft"])
        tpot = 0
        if n > 1:
            tpot = (lat - ttft) / (n - 1)
            tpots.append(tpot)
        all_tpots.append(tpot)
        itls += [sec(g) for g in r["itl"]]
        ttfts.append(ttft)
    good = 0
    if goodput:
        cols, limits = [], []
        for name, col in (("ttft", ttfts), ("tpot", all_tpots), ("e2el", e2els)):
            if name in goodput:
                cols.append(col)
                limits.append(goodput[name] / 1000)
        for vals in zip(*cols):
            if all(lim >= v for lim, v in zip(limits, vals)):
                good += 1
    out["duration"] = dur
    out["completed"] = len(ok)
    out["failed"] = len(failed)
    out["total_input_tokens"] = total_in
    out["request_throughput"] = len(ok) / dur
    out["total_token_throughput"] = (total_in + total_out) / dur
    if not pooling:
        out["total_output_tokens"] = total_out
        out["output_throughput"] = total_out / dur
        if goodput:
            out["request_goodput"] = good / dur
        peak_tok, peak_conc = peaks(ok)
        out["max_output_tokens_per_s"] = peak_tok
        out["max_concurrent_requests"] = peak_conc
    queues = [sec(r["start"] - r["dispatched"]) for r in sent]
    lags = [sec(r["start"] - r["scheduled"]) for r in sent]
    e2elq = [sec(r["start"] - r["scheduled"] + r["latency"]) for r in ok]
    metrics = {"e2el": e2els, "queue": queues, "schedule_lag": lags, "e2el_with_queue": e2elq}
    if not pooling:
        metrics.update(ttft=ttfts, tpot=tpots, itl=itls)
    all_pcts = sorted(set(pcts + [0, 25, 50, 75, 90, 99, 99.9, 100]))
    for m, xs in metrics.items():
        s = stats(xs, all_pcts)
        out[f"mean_{m}_ms"] = s["mean"]
        out[f"median_{m}_ms"] = s["median"]
        out[f"std_{m}_ms"] = s["std"]
        for p, v in s["p"]:
            out[f"p{pword(p)}_{m}_ms"] = v
    kinds = ["http_status", "stream_error", "timeout", "transport", "canceled"]
    for k in kinds:
        out[f"failed_{k}"] = sum(1 for r in failed if r["failure"] == k)
    out["failure_ratio"] = len(failed) / len(sent) if sent else 0
    return {k: float(v) for k, v in out.items()}, {
        "ttft": ttfts, "tpot": tpots, "itl": itls, "e2el": e2els}, good


def peaks(ok):
    if not ok:
        return 0.0, 0
    t0 = min(sec(r["start"]) for r in ok)
    t1 = max(sec(r["start"]) + sec(r["latency"]) for r in ok)
    n = int(np.ceil(t1 - t0)) + 1
    tok = np.zeros(n)
    conc = np.zeros(n)
    for r in ok:
        st = sec(r["start"])
        times = [st + sec(r["ttft"])]
        cur = times[0]
        for g in r["itl"]:
            cur += sec(g)
            times.append(cur)
        weights = r["chunk_tokens"] or [1] * len(times)
        for tt, w in zip(times, weights):
            b = int(tt - t0)
            if 0 <= b < n:
                tok[b] += w
        for s in range(int(st - t0), int((st + sec(r["latency"])) - t0) + 1):
            conc[s] += 1
    return float(np.max(tok)), int(np.max(conc))


def result_file(recs, dur_ns, opts, info, detailed):
    """The dict vllm bench serve saves, in its key order."""
    pooling = opts.get("pooling", False)
    vals, _, _ = summarize(recs, dur_ns, opts)
    res = {
        "date": info["date"],
        "endpoint_type": info["backend"],
        "backend": info["backend"],
        "label": None,
        "model_id": info["model_id"],
        "tokenizer_id": info["tokenizer_id"],
        "num_prompts": info["num_prompts"],
    }
    for k, v in info.get("metadata", []):
        res[k] = v
    res["request_rate"] = info["request_rate"]
    res["burstiness"] = 1.0
    res["max_concurrency"] = info["max_concurrency"]
    out_lens = [r["output_tokens"] if (r["success"] and not r["unsent"]) else 0 for r in recs]
    if pooling:
        in_lens = [r["server_prompt_tokens"] for r in recs]
    else:
        in_lens = [r["server_prompt_tokens"] or r["prompt_len"] for r in recs]
    bench = {"duration": sec(dur_ns), "completed": int(vals["completed"])}
    if pooling:
        bench.update({
            "total_input_tokens": int(vals["total_input_tokens"]),
            "request_throughput": vals["request_throughput"],
            "total_token_throughput": vals["total_token_throughput"],
            "input_lens": in_lens,
            "errors": [r["error"] for r in recs],
        })
    else:
        bench.update({
            "failed": int(vals["failed"]),
            "total_input_tokens": int(vals["total_input_tokens"]),
            "total_output_tokens": int(vals["total_output_tokens"]),
            "request_throughput": vals["request_throughput"],
            "request_goodput": vals.get("request_goodput"),
            "output_throughput": vals["output_throughput"],
            "total_token_throughput": vals["total_token_throughput"],
            "input_lens": in_lens,
            "output_lens": out_lens,
            "ttfts": [sec(r["ttft"]) for r in recs],
            "itls": [[sec(g) for g in r["itl"]] for r in recs],
            "generated_texts": [r["generated_text"] for r in recs],
            "errors": [r["error"] for r in recs],
            "max_output_tokens_per_s": vals["max_output_tokens_per_s"],
            "max_concurrent_requests": int(vals["max_concurrent_requests"]),
        })
    bench["start_times"] = [sec(r["start"]) for r in recs]
    bench["latencies"] = [sec(r["latency"]) for r in recs]
    order = ["e2el"] if pooling else ["ttft", "tpot", "itl", "e2el"]
    selected = opts.get("percentile_metrics") or (["e2el"] if pooling else ["ttft", "tpot", "itl"])
    for m in order:
        if m not in selected:
            continue
        for stat in ("mean", "median", "std"):
            bench[f"{stat}_{m}_ms"] = vals[f"{stat}_{m}_ms"]
        for p in opts.get("percentiles", [99]):
            bench[f"p{pword(p)}_{m}_ms"] = vals[f"p{pword(p)}_{m}_ms"]
    res = {**res, **bench}
    if not detailed:
        for k in ["input_lens", "output_lens", "ttfts", "itls", "generated_texts",
                  "errors", "start_times", "latencies"]:
            res.pop(k, None)
    return res


OPTION_SETS = {
    "default": {},
    "all": {
        "percentile_metrics": ["ttft", "tpot", "itl", "e2el"],
        "percentiles": [25, 50, 90, 99, 99.9, 33.3],
        "goodput": {"ttft": 150.0, "tpot": 12.5, "e2el": 2000.0},
    },
    "goodput_ttft": {"goodput": {"ttft": 80.0}},
    "pooling": {"pooling": True, "percentiles": [50, 99]},
}

INFO = {
    "date": "20251129-180000",
    "backend": "openai-chat",
    "model_id": "meta-llama/Llama-3.2-1B-Instruct",
    "tokenizer_id": "meta-llama/Llama-3.2-1B-Instruct",
    "num_prompts": 300,
    "metadata": [["gpu", "none"], ["run", "golden"]],
    "request_rate": 20.0,
    "max_concurrency": 16,
}


def main():
    rng = np.random.default_rng(20251129)
    recs = make_records(rng, 300)
    end = max(r["start"] + r["latency"] for r in recs)
    dur_ns = end + 1_234_567
    with open("records.json", "w") as f:
        json.dump({"duration_ns": dur_ns, "records": recs}, f, indent=1)
    expected = {}
    for name, opts in OPTION_SETS.items():
        vals, _, _ = summarize(recs, dur_ns, opts)
        expected[name] = {"options": opts, "values": vals}
    with open("expected.json", "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
    for name in ("all", "pooling"):
        opts = OPTION_SETS[name]
        info = dict(INFO)
        if name == "pooling":
            info["backend"] = "openai-embeddings"
        for detailed in (False, True):
            suffix = "-detailed" if detailed else ""
            with open(f"result_{name}{suffix}.json", "w") as f:
                json.dump(result_file(recs, dur_ns, opts, info, detailed), f)
    # Python's float repr for the Go formatter's tests.
    floats = [0.0, -0.0, 1.0, 0.1, 1e-05, 0.0001, 123456789.123, 1e16, 1.5e16,
              9999999999999998.0, 1234567890123456.0, 2.5e-07, 1 / 3, 1e300, 5e-324,
              math.pi * 1e-5, 100.0, 99.9]
    with open("floats.json", "w") as f:
        json.dump([[repr(x), x] for x in floats], f)


if __name__ == "__main__":
    main()
