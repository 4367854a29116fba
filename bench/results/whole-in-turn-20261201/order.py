import json, math, sys, collections
KEYS = {"copy": "seconds", "sync": "seconds", "copy-verify": "seconds"}
d = collections.defaultdict(list)
for dirn in sys.argv[1:]:
    for l in open(dirn + "/results.jsonl"):
        r = json.loads(l)
        if r.get("record") != "measurement" or r.get("status") != "ok" or not r.get("in_turn"):
            continue
        key = KEYS.get(r["workload"], "files_per_s")
        sign = -1 if key == "seconds" else 1   # + : candidate faster
        x = sign * math.log(r["metrics"][key] / r["in_turn"]["metrics"][key])
        first = any("right before" in n for n in r.get("notes", []))
        # second-run advantage: + when the run second is faster
        d[(r["workload"], r.get("variant", ""))].append(x if first else -x)
tot=[]
for k, v in sorted(d.items()):
    n = len(v); m = sum(v)/n; sd = math.sqrt(sum((x-m)**2 for x in v)/(n-1))
    tot += v
    print(f"{' '.join(k):20} n={n} second-run advantage {m*100:+.1f} % (se {sd/math.sqrt(n)*100:.1f}) sd {sd:.3f}")
n=len(tot); m=sum(tot)/n; sd=math.sqrt(sum((x-m)**2 for x in tot)/(n-1))
print(f"all n={n} {m*100:+.2f} % se {sd/math.sqrt(n)*100:.2f}")
