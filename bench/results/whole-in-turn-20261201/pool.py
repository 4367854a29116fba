import json, math, sys, collections
KEYS = {"copy": "seconds", "sync": "seconds", "copy-verify": "seconds"}
pair = collections.defaultdict(list); own = collections.defaultdict(list)
for run, dirn in enumerate(sys.argv[1:]):
    for l in open(dirn + "/results.jsonl"):
        r = json.loads(l)
        if r.get("record") != "measurement" or r.get("status") != "ok":
            continue
        k = (r["workload"], r.get("variant", ""))
        key = KEYS.get(r["workload"], "files_per_s")
        own[k + (r["target"], run)].append(math.log(r["metrics"][key]))
        if r.get("in_turn"):
            pair[k + (run,)].append(math.log(r["metrics"][key] / r["in_turn"]["metrics"][key]))
def ss(xs):
    m = sum(xs) / len(xs); return sum((x - m) ** 2 for x in xs), len(xs) - 1
print("| point | cells | paired sd | apart sd (ext4, twin) | apart sd of a difference | paired/apart |")
print("|---|---|---|---|---|---|")
for k in sorted({k[:2] for k in pair}):
    runs = range(len(sys.argv) - 1)
    s, d = map(sum, zip(*[ss(pair[k + (r,)]) for r in runs]))
    p = math.sqrt(s / d)
    sd = {}
    for t in ("ext4", "twin"):
        s2, d2 = map(sum, zip(*[ss(own[k + (t, r)]) for r in runs]))
        sd[t] = math.sqrt(s2 / d2)
    u = math.hypot(sd["ext4"], sd["twin"])
    print(f"| {' '.join(k).strip()} | {d + len(runs)} | {p:.3f} | {sd['ext4']:.3f}, {sd['twin']:.3f} | {u:.3f} | {p/u:.2f} |")
