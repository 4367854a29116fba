#!/usr/bin/env python3
"""Re-analysis of a results directory: what blocking by round and the host probe as a
covariate each decide, on the records of one run (issue 41, item 3).

Usage: fsarena report DIR >/dev/null; python3 bench/blocking.py DIR [BASELINE] [--pair-always]

An independent re-implementation (standard library only) of the decision rule of
`src/stats` for a fixed-size run, used to weigh a method before building it: per
comparison of a disk target with the baseline, on the key metric's logs, four tests:
  unpaired  Welch, each side's variance moderated over the point's pool (Smyth 2004)
  paired    the per-round differences (repetition r of both sides), their variance
            moderated over the pool's paired differences (d0 capped at what they hold
            independently: K differences of a point share its baseline, so are worth
            K / (1 + (K - 1)/4), less the comparison's own)
  +probe    the same after taking out b*ln(host_probe_ms), b the pool's within-group slope
fsarena pairs only where a point's pool has two thread counts or more; --pair-always pairs
a one-thread-count run too (the default run), to see what that would decide. Then
Benjamini-Hochberg at 5 % over the comparisons with the baseline (fsarena's family
also holds the ranking pairs, so its counts can differ by one or two). Prints the decided
count of each, and the comparisons whose two sides' runs do not overlap.
"""
import json
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agree import t_sf2  # noqa: E402


def t_p(t, df):
    """Two-sided p-value of Student's t (agree.py's, on the incomplete beta function)."""
    return t_sf2(t, df)


def trigamma(x):
    acc = 0.0
    while x < 6.0:
        acc, x = acc + 1.0 / (x * x), x + 1.0
    x2 = 1.0 / (x * x)
    return acc + 1 / x + x2 / 2 + (1 / 6 - x2 * (1 / 30 - x2 * (1 / 42 - x2 / 30))) * x2 / x


def digamma(x):
    acc = 0.0
    while x < 6.0:
        acc, x = acc - 1.0 / x, x + 1.0
    x2 = 1.0 / (x * x)
    return acc + math.log(x) - 0.5 / x - x2 * (1 / 12 - x2 * (1 / 120 - x2 / 252))


def inverse_trigamma(y):
    lo, hi = 1e-8, 1e8
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if trigamma(mid) > y else (lo, mid)
    return math.sqrt(lo * hi)


def mean(x):
    return sum(x) / len(x)


def var(x):
    m = mean(x)
    return sum((v - m) ** 2 for v in x) / (len(x) - 1)


def prior(samples, cap=math.inf):
    """Smyth's (2004) prior of the samples' variances: (s0^2, d0), or None."""
    st = [(var(s), len(s) - 1.0) for s in samples if len(s) >= 2]
    if len(st) < 3 or any(v <= 0 for v, _ in st) or cap <= 0:
        return None
    e = [math.log(v) - digamma(d / 2) + math.log(d / 2) for v, d in st]
    em = mean(e)
    spread = sum((x - em) ** 2 for x in e) / (len(e) - 1) - mean([trigamma(d / 2) for _, d in st])
    cap = min(cap, sum(d for _, d in st) - max(d for _, d in st))
    d0 = min(2 * inverse_trigamma(spread), cap) if spread > 0 else cap
    return math.exp(em + digamma(d0 / 2) - math.log(d0 / 2)), d0


def side(x, pr):
    """A side's squared standard error and degrees of freedom, moderated, never below its own."""
    s2, d = var(x), len(x) - 1.0
    if pr:
        post = (pr[1] * pr[0] + d * s2) / (pr[1] + d)
        if post > s2:
            return post / len(x), pr[1] + d
    return s2 / len(x), d


def welch_p(b, c, pr):
    (vb, db), (vc, dc) = side(b, pr), side(c, pr)
    df = (vb + vc) ** 2 / (vb * vb / db + vc * vc / dc)
    return t_p((mean(c) - mean(b)) / math.sqrt(vb + vc), df)


def paired_p(d, pr):
    v, df = side(d, pr)
    return t_p(mean(d) / math.sqrt(v), df)


def bh(ps):
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adj, run = [1.0] * len(ps), 1.0
    for rank in range(len(ps), 0, -1):
        i = order[rank - 1]
        run = min(run, ps[i] * len(ps) / rank)
        adj[i] = run
    return adj


def main():
    always = "--pair-always" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--pair-always"]
    out, base = args[0], (args[1] if len(args) > 1 else "ext4")
    summary = json.load(open(f"{out}/summary.json"))
    key = {(s["workload"], s["variant"]): s["key_metric"] for s in summary["sections"]}
    ref = {r["target"] for s in summary["sections"] for r in s["rows"] if r.get("reference")}
    # points[(workload, dataset, variant)][threads][target][repetition] = (ln value, ln probe)
    points = defaultdict(lambda: defaultdict(dict))
    for line in open(f"{out}/results.jsonl"):
        m = json.loads(line)
        k = key.get((m.get("workload"), m.get("variant")))
        if m.get("record") != "measurement" or m["status"] != "ok" or k not in m["metrics"]:
            continue
        v, probe = m["metrics"][k], m.get("host_probe_ms") or 0.0
        if v > 0 and probe > 0:
            pool = (m["workload"], m.get("dataset"), m["variant"])
            points[pool][m["threads"]].setdefault(m["target"], {})[m["repetition"]] = (
                math.log(v), math.log(probe))
    results = defaultdict(dict)
    apart = []
    for pool, by_threads in points.items():
        groups = [g for p in by_threads.values() for g in p.values()]
        sxy = sum((y - mean([a[0] for a in g.values()])) * (x - mean([a[1] for a in g.values()]))
                  for g in groups for y, x in g.values())
        sxx = sum((x - mean([a[1] for a in g.values()])) ** 2 for g in groups for _, x in g.values())
        slope = sxy / sxx if sxx > 0 else 0.0
        for with_probe in (False, True):
            adj = lambda g, r: g[r][0] - (slope * g[r][1] if with_probe else 0.0)
            series = lambda g: [adj(g, r) for r in sorted(g)]
            gp = prior([series(g) for g in groups])
            diffs = {}
            for th, p in by_threads.items():
                if base not in p:
                    continue
                for t, g in p.items():
                    same = sorted(g) == sorted(p[base])
                    if t != base and t not in ref and same:
                        diffs[(th, t)] = [adj(g, r) - adj(p[base], r) for r in sorted(g)]
            per_point = defaultdict(list)
            for (th, _), d in diffs.items():
                per_point[th].append(len(d) - 1.0)
            worth = sum(max(f) * len(f) / (1 + (len(f) - 1) / 4) for f in per_point.values())
            own = max((x for f in per_point.values() for x in f), default=0.0)
            pp = prior(list(diffs.values()), max(worth - own, 0.0)) if always or len(per_point) >= 2 else None
            tag = "+probe" if with_probe else ""
            for th, p in by_threads.items():
                for t, g in p.items():
                    if t == base or t in ref or base not in p:
                        continue
                    name = (pool[0], pool[2], th, t)
                    b, c = series(p[base]), series(g)
                    results["unpaired" + tag][name] = welch_p(b, c, gp)
                    if (th, t) in diffs and pp:
                        results["paired" + tag][name] = paired_p(diffs[(th, t)], pp)
                    raw_b = [math.exp(x[0]) for x in p[base].values()]
                    raw_c = [math.exp(x[0]) for x in g.values()]
                    if not with_probe and (max(raw_b) < min(raw_c) or max(raw_c) < min(raw_b)):
                        apart.append(name)
    for method, ps in results.items():
        names = list(ps)
        adj = dict(zip(names, bh([ps[n] for n in names])))
        decided = [n for n in names if adj[n] < 0.05]
        sep = [n for n in apart if adj.get(n, 1.0) < 0.05]
        print(f"{method:16} decided {len(decided):3} of {len(names)}; "
              f"runs apart: {len(sep)} of {len(apart)} decided")


if __name__ == "__main__":
    main()
