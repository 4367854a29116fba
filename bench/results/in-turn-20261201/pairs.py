import json,sys,math,collections
d=collections.defaultdict(list)
for l in open(sys.argv[1]+'/results.jsonl'):
    r=json.loads(l)
    if 'workload' not in r or r.get('status')!='ok': continue
    key='seconds_per_pass' if r['workload'] in ('cold-read','dupes') else 'files_per_s'
    k=r['metrics'].get(key); it=r.get('in_turn')
    ik=it['metrics'].get(key) if it else None
    d[(r['workload'],r['variant'],r['target'])].append((r['repetition'],k,ik))
for key,v in sorted(d.items()):
    own=[x[1] for x in v]; comp=[x[2] for x in v if x[2]]
    gm=lambda xs: math.exp(sum(map(math.log,xs))/len(xs)) if xs else float('nan')
    rat=[x[1]/x[2] for x in v if x[2]]
    print(key, 'own %.5g'%gm(own), 'comp %.5g'%gm(comp), 'ratios', ' '.join('%.3f'%r for r in rat))
