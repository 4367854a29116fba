#!/usr/bin/env python3
"""Does `fsarena tune` find what an exhaustive sweep finds, in a third of its time? (issue 38)

For each file system FS and workload W (cells of --fs × --workload):

1. calibrates every cell first: one `fsarena run` of FS's defaults on W, one repetition,
   timed (with --cell-seconds T: at the scale whose cell takes about T s, found by
   rescaling and calibrating again), then --spread-runs runs of it whose run-to-run spread
   (CV) it prints, warning over 5 %; and prints the expected wall time of each sweep and tune,
   and of the whole measurement, before any starts;
2. the sweep: every configuration of the space (bench/tune/FS-space16.toml unless --space;
   at most 16, `replace = true`) as a `[[target]]` of one plan, --runs repetitions each, a
   fresh file system per cell (fsarena's own), the same --scale and --fs-size as the tune;
3. the tune: `fsarena tune FS --workload W --space SPACE --budget B` on the same space;
4. the table: the sweep's best configuration and its mean, the tuner's answer, the answer's
   mean in the sweep's own data and in the tune's, the gap to the sweep's best, whether the
   sweep separates the answer from its best, the decision, each wall time and their ratio.

The winner's curse: the sweep's best is the largest of (up to) 16 means of --runs noisy
runs, so it is biased upwards, and so is the gap measured against it. The table says
whether the sweep itself can separate the answer from its best: Welch's t-test on the
logarithm of the key metric (two-sided, 5 %, unadjusted, which makes separating easier and so
is the strict side for the tuner); "not separated" means the sweep's own data cannot tell
the two apart. The decision: **met** when the tune took at most a third of the sweep's wall
time and its answer is within 5 % of the sweep's best mean (in the sweep's data) or not
separated from it; else **missed**, with the reason.

Usage: sudo bench/tune_vs_sweep.py [--fs ext4,xfs] [--workload varmail,create]
           [--space FILE] [--scale F] [--cell-seconds T] [--spread-runs 3] [--fs-size SIZE]
           [--runs 3] [--budget 15m|third] [--candidates N] [--out DIR] [--work-dir DIR]
           [--fsarena PATH] [--calibrate-only]
Defaults: --fs ext4 --workload create --scale 0.01 --runs 3 --budget 15m; --out
bench/results/tune-vs-sweep-<date-time>. Without --candidates, the tune races as many
candidates as two runs each of fit in three quarters of a third of the sweep's calibrated
time (at least 4, at most the space's size): the rest of that third is for its rounds, and
the tune must stop once decided, before its budget, to take at most a third of the sweep. A cell (FS, W) whose directory already holds a
finished sweep or tune reuses it, so an interrupted measurement continues where it stopped.
`--budget third` gives each tune a budget of a third of its own sweep's measured wall time,
less 5 % for the tune's start and its answer (THIRD_SLACK): the question is then what the
tuner answers when it may spend no more than a third of the sweep, decided or not.
Everything it makes goes through fsarena (which cleans up on any exit); nothing else is
formatted or mounted.
"""

import argparse
import datetime
import itertools
import json
import math
import pathlib
import shutil
import subprocess
import sys
import time
import tomllib

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
MIN_RUNS = 2  # the tune's minimum repetitions per candidate (src/tune/setup.rs MIN_RUNS)
THIRD_SLACK = 0.05  # --budget third: the share of the third left for the tune's start and answer


def parse_duration(text):
    """Seconds of "15m", "90s", "1h", "2m30s"."""
    total, num = 0.0, ""
    units = {"h": 3600, "m": 60, "s": 1}
    for ch in text.strip():
        if ch.isdigit() or ch == ".":
            num += ch
        elif ch in units and num:
            total += float(num) * units[ch]
            num = ""
        else:
            sys.exit(f"tune_vs_sweep: bad duration `{text}` (e.g. 15m, 90s, 1h)")
    return total + (float(num) if num else 0.0)


def configurations(space_path):
    """Every configuration of the space file, in the tune's odometer order (the defaults
    first): (name, mkfs args, mount options, {param: value})."""
    with open(space_path, "rb") as f:
        space = tomllib.load(f)
    if not space.get("replace"):
        sys.exit(f"tune_vs_sweep: {space_path}: the space must say `replace = true` "
                 "(the sweep covers exactly its parameters)")
    params = space.get("param", [])
    size = math.prod(len(p["values"]) for p in params)
    if not params or size > 16:
        sys.exit(f"tune_vs_sweep: {space_path}: {size} configurations; the sweep takes "
                 "at most 16")
    combos = list(itertools.product(*[p["values"] for p in params]))
    defaults = tuple(p["default"] for p in params)
    combos.remove(defaults)
    out = []
    for i, combo in enumerate([defaults] + combos):
        mkfs, mount = [], []
        for p, v in zip(params, combo):
            if p["kind"] == "mkfs":
                mkfs += v.split()
            elif v:
                mount.append(v)
        out.append((f"s{i:02d}", mkfs, mount, dict(zip((p["name"] for p in params), combo))))
    return space.get("fs"), out


def sweep_plan(fs, workload, configs, args, scale):
    """The sweep's plan file: one [[target]] per configuration."""
    lines = [
        "# The exhaustive sweep of bench/tune_vs_sweep.py (s00 = the defaults).",
        f"workloads = [{json.dumps(workload)}]",
        f"scale = {scale}",
        f"runs = {args.runs}",
        'baseline = "s00"',
    ]
    if args.fs_size:
        lines.append(f"fs_size = {json.dumps(args.fs_size)}")
    for name, mkfs, mount, _ in configs:
        lines += ["", "[[target]]", f'name = "{name}"', f'fs = "{fs}"',
                  f"mkfs = {json.dumps(mkfs)}", f"mount = {json.dumps(mount)}"]
    return "\n".join(lines) + "\n"


def run(cmd, log):
    """Runs `cmd` with its output in `log`; its wall seconds. Exits on failure."""
    print("  $ " + " ".join(str(c) for c in cmd), flush=True)
    start = time.monotonic()
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    seconds = time.monotonic() - start
    if rc != 0:
        sys.exit(f"tune_vs_sweep: exit {rc} from {cmd[1]}; see {log}")
    return seconds


def common_flags(args, scale):
    flags = ["--scale", str(scale), "--work-dir", str(args.work_dir), "--quiet"]
    return flags + (["--fs-size", args.fs_size] if args.fs_size else [])


def key_metric(fsarena, results_dir):
    """The key metric of the (one) workload, as fsarena's report decides on it."""
    out = subprocess.run([fsarena, "report", str(results_dir), "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    s = json.loads(out)["sections"][0]
    return s["key_metric"], s["higher_is_better"]


def runs_by_target(results_dir, metric, higher):
    """Per target, per repetition: the oriented log key metric averaged over the workload's
    points (higher is better)."""
    per = {}
    with open(results_dir / "results.jsonl") as f:
        for line in f:
            r = json.loads(line)
            if r.get("record") != "measurement" or r.get("status") != "ok":
                continue
            v = r.get("metrics", {}).get(metric)
            if not v or v <= 0:
                continue
            y = math.log(v) if higher else -math.log(v)
            per.setdefault(r["target"], {}).setdefault(r["repetition"], []).append(y)
    return {t: [sum(ys) / len(ys) for _, ys in sorted(reps.items())] for t, reps in per.items()}


def mean(xs):
    return sum(xs) / len(xs)


def shown(y, higher):
    """An oriented log mean back in the metric's units."""
    return math.exp(y) if higher else math.exp(-y)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (continued fraction, Lentz)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - betainc(b, a, 1.0 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log(1 - x)) / a
    f, c, d = 1.0, 1.0, 0.0
    for i in range(400):
        m = i // 2
        if i == 0:
            num = 1.0
        elif i % 2 == 0:
            num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        else:
            num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1.0 + num / (c if abs(c) > 1e-300 else 1e-300)
        f *= c * d
        if abs(1.0 - c * d) < 1e-12:
            break
    return front * (f - 1.0)


def welch_p(x, y):
    """Two-sided p of Welch's t-test; 1.0 when either side has fewer than 2 runs or no
    spread at all."""
    if len(x) < 2 or len(y) < 2:
        return 1.0
    vx = sum((v - mean(x)) ** 2 for v in x) / (len(x) - 1) / len(x)
    vy = sum((v - mean(y)) ** 2 for v in y) / (len(y) - 1) / len(y)
    if vx + vy <= 0:
        return 0.0 if mean(x) != mean(y) else 1.0
    t = (mean(x) - mean(y)) / math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    return betainc(df / 2, 0.5, df / (df + t * t))


def calibrate(fsarena, fs, workload, cell_dir, args, scale, name="calibration", runs=1):
    """Wall seconds of one cell of FS's defaults on the workload at `scale` (provisioning
    included), less fsarena's start and end, which a plan pays once: the cell's own
    `cell_seconds` from its record when it has one."""
    flags = ["--target", fs, "--workload", workload, "--runs", str(runs)]
    out = cell_dir / name
    shutil.rmtree(out, ignore_errors=True)
    wall = run([fsarena, "run", *flags, *common_flags(args, scale), "--out", out],
               cell_dir / f"{name}.log")
    with open(out / "results.jsonl") as f:
        cells = [json.loads(line).get("cell_seconds") for line in f]
    cells = sorted(c for c in cells if c)
    return cells[len(cells) // 2] if cells else wall / runs


def spread(fsarena, fs, workload, cell_dir, args, scale):
    """The run-to-run spread of FS's defaults on the workload at `scale`: --spread-runs
    runs, the standard deviation of the key metric's logarithm in % (≈ the CV), and the
    median cell's seconds."""
    c = calibrate(fsarena, fs, workload, cell_dir, args, scale, "spread", args.spread_runs)
    metric, higher = key_metric(fsarena, cell_dir / "spread")
    ys = next(iter(runs_by_target(cell_dir / "spread", metric, higher).values()), [])
    if len(ys) < 2:
        return None, c
    sd = math.sqrt(sum((y - mean(ys)) ** 2 for y in ys) / (len(ys) - 1))
    return sd * 100, c


def find_scale(fsarena, fs, workload, cell_dir, args, wall):
    """The scale and calibrated cell seconds of (FS, workload): --scale as given, or with
    --cell-seconds T the scale whose cell takes about T s (within 0.75–1.33×): calibrated at
    --scale first, then rescaled in proportion (a cell's work grows with the scale: create's
    files, varmail's operations) and calibrated again, at most 4 tries. Kept in `wall`."""
    if "calibration" in wall:
        return wall.get("scale", args.scale), wall["calibration"]
    scale, c = args.scale, None
    for attempt in range(4 if args.cell_seconds else 1):
        c = calibrate(fsarena, fs, workload, cell_dir, args, scale)
        print(f"  calibration: scale {scale:g}: one cell {c:.1f} s", flush=True)
        if not args.cell_seconds or 0.75 <= c / args.cell_seconds <= 1.33:
            break
        if attempt < 3:
            scale = float(f"{scale * args.cell_seconds / max(c, 0.1):.3g}")
        else:
            print(f"  calibration: no scale within 0.75–1.33× of {args.cell_seconds:g} s after "
                  "4 tries (a noisy host): the last is used", flush=True)
    if args.spread_runs > 1:
        cv, c = spread(fsarena, fs, workload, cell_dir, args, scale)
        wall["spread_pct"] = cv
        print(f"  spread: {args.spread_runs} runs at scale {scale:g}: CV ≈ "
              f"{'—' if cv is None else f'{cv:.1f} %'}, one cell {c:.1f} s"
              + ("  WARNING: over 5 %: a longer --cell-seconds or a quieter host"
                 if cv is not None and cv > 5 else ""), flush=True)
    wall["scale"], wall["calibration"] = scale, c
    return scale, c


def prepare(fsarena, fs, workload, args):
    """One (FS, workload) cell calibrated: its space's configurations, the candidates the
    tune races, the expected wall times (printed) and the wall times measured so far."""
    space = args.space or HERE / "tune" / f"{fs}-space16.toml"
    space_fs, configs = configurations(space)
    if space_fs and space_fs != fs:
        sys.exit(f"tune_vs_sweep: {space} is a space for {space_fs}, not {fs}")
    cell = args.out / f"{fs}-{workload}"
    cell.mkdir(parents=True, exist_ok=True)
    timing_file = cell / "wall_seconds.json"
    wall = json.loads(timing_file.read_text()) if timing_file.exists() else {}
    print(f"== {fs} × {workload}: {len(configs)} configurations of {space}", flush=True)
    scale, c = find_scale(fsarena, fs, workload, cell, args, wall)
    timing_file.write_text(json.dumps(wall))
    sweep_cells = len(configs) * args.runs
    third = sweep_cells * c / 3
    # The candidates whose minimum (2 runs each) takes at most 3/4 of a third of the sweep,
    # the rest of that third for the rounds: the tune must stop once decided, long before
    # its budget, to take at most a third of the sweep's time. With --candidates, as given.
    n = args.candidates or max(4, min(len(configs), int(third * 3 / 4 / (MIN_RUNS * c))))
    minimum = n * MIN_RUNS * c
    budget = args.budget or third * (1 - THIRD_SLACK)
    expected = {"sweep": sweep_cells * c, "tune": min(budget, max(third, minimum)),
                "tune_max": max(budget, minimum), "calibration": c}
    print(f"  scale {scale:g}: one cell ≈ {c:.0f} s: the sweep ≈ {sweep_cells} cells ≈ "
          f"{expected['sweep'] / 60:.0f} min; the tune ≈ {minimum / 60:.1f} min of minimum runs "
          f"({n} candidates × {MIN_RUNS}), ≤ {third / 60:.1f} min (a third of the sweep) if it "
          f"decides in time, at most its budget of {budget / 60:.1f} min", flush=True)
    if expected["sweep"] < 3 * minimum:
        print("  WARNING: the sweep is expected to take less than 3× the tune's minimum runs: "
              "the tune cannot be within a third of it; give a longer --cell-seconds", flush=True)
    return {"fs": fs, "workload": workload, "space": space, "configs": configs, "cell": cell,
            "candidates": n, "wall": wall, "timing_file": timing_file, "expected": expected,
            "scale": scale}


def measure(fsarena, c, args):
    """Sweeps and tunes a prepared cell (each skipped when already done); its table row."""
    fs, workload, cell, wall = c["fs"], c["workload"], c["cell"], c["wall"]
    print(f"\n== {fs} × {workload}", flush=True)
    sweep = cell / "sweep"
    if "sweep" not in wall:
        shutil.rmtree(sweep, ignore_errors=True)
        plan = cell / "sweep.toml"
        plan.write_text(sweep_plan(fs, workload, c["configs"], args, c["scale"]))
        wall["sweep"] = run([fsarena, "run", plan, "--out", sweep, "--work-dir",
                             str(args.work_dir), "--quiet"], cell / "sweep.log")
        c["timing_file"].write_text(json.dumps(wall))
    tune = cell / "tune"
    if "tune" not in wall:
        shutil.rmtree(tune, ignore_errors=True)
        wall["tune_budget"] = args.budget or wall["sweep"] / 3 * (1 - THIRD_SLACK)
        wall["tune"] = run([fsarena, "tune", fs, "--workload", workload, "--space", c["space"],
                            "--budget", f"{wall['tune_budget']:.0f}s",
                            "--candidates", str(c["candidates"]),
                            *common_flags(args, c["scale"]), "--out", tune], cell / "tune.log")
        c["timing_file"].write_text(json.dumps(wall))
    return row(fsarena, fs, workload, c["configs"], sweep, tune, wall)


def row(fsarena, fs, workload, configs, sweep, tune, wall):
    """The table row of one cell from its sweep's and tune's records."""
    metric, higher = key_metric(fsarena, sweep)
    s_runs = runs_by_target(sweep, metric, higher)
    means = {t: mean(v) for t, v in s_runs.items()}
    best = max(means, key=means.get)
    answer = json.loads((tune / "answer.json").read_text())
    b = answer.get("best") or {}
    name = next((n for n, mkfs, mount, _ in configs
                 if mkfs == b.get("mkfs_args") and mount == b.get("mount_options")), None)
    t_runs = runs_by_target(tune / "runs", metric, higher).get(b.get("name"), [])
    not_separated = [t for t in s_runs if t == best or welch_p(s_runs[t], s_runs[best]) >= 0.05]
    gap = (math.exp(means[name] - means[best]) - 1) * 100 if name in means else None
    p = welch_p(s_runs[name], s_runs[best]) if name in s_runs and name != best else 1.0
    ratio = wall["tune"] / wall["sweep"]
    within = gap is not None and gap >= -5.0
    separated = name is None or name not in not_separated
    if ratio > 1 / 3:
        decision = f"missed: {ratio:.2f}× the sweep's time"
    elif within or not separated:
        decision = "met: " + ("within 5 %" if within else "not separated from the best")
    else:
        decision = f"missed: {gap:.1f} %, separated (p = {p:.3f})"
    config = dict(zip(("mkfs", "mount"), (b.get("mkfs_args"), b.get("mount_options"))))
    return {
        "cell": f"{fs} {workload}", "metric": metric, "sweep_best": best,
        "sweep_best_mean": shown(means[best], higher), "sweep_all_mean": shown(mean(list(means.values())), higher),
        "answer": b.get("name"), "answer_config": name, "answer_settings": config,
        "answer_unsafe": [u["value"] for u in b.get("unsafe", [])],
        "answer_in_sweep": shown(means[name], higher) if name in means else None,
        "answer_in_tune": shown(mean(t_runs), higher) if t_runs else None,
        "answer_tune_runs": len(t_runs), "gap_pct": gap, "p_vs_best": p,
        "not_separated": sorted(not_separated), "decision": decision,
        "ended": answer.get("ended"), "candidates": len(answer.get("candidates", [])),
        "sweep_s": wall["sweep"], "tune_s": wall["tune"], "ratio": ratio,
        "tune_budget_s": wall.get("tune_budget"),
        "calibration_s": wall["calibration"], "scale": wall.get("scale"),
        "sweep_configs": [
            {"config": n, "settings": settings, "mean": shown(means[n], higher) if n in means else None,
             "runs": len(s_runs.get(n, [])),
             "p_vs_best": welch_p(s_runs[n], s_runs[best]) if n in s_runs and n != best else None}
            for n, _, _, settings in configs],
    }


def fmt(v, digits=0):
    return "—" if v is None else f"{v:,.{digits}f}"


def table(rows):
    out = ["| cell | metric | sweep's best (mean) | tuner's answer | answer in the sweep | "
           "answer in the tune (runs) | gap to the sweep's best | sweep separates them? | "
           "sweep | tune | ratio | decision |",
           "|---|---|---|---|---|---|---:|---|---:|---:|---:|---|"]
    for r in rows:
        sep = ("— (the same)" if r["answer_config"] == r["sweep_best"] else
               "no" if r["answer_config"] in r["not_separated"] else "yes")
        unsafe = f" UNSAFE: {', '.join(r['answer_unsafe'])}" if r["answer_unsafe"] else ""
        budget = f" (budget {r['tune_budget_s']:.0f} s)" if r.get("tune_budget_s") else ""
        out.append(
            f"| {r['cell']} | {r['metric']} | {r['sweep_best']} ({fmt(r['sweep_best_mean'])}) "
            f"| {r['answer']} = {r['answer_config']}{unsafe} | {fmt(r['answer_in_sweep'])} "
            f"| {fmt(r['answer_in_tune'])} ({r['answer_tune_runs']}) | {fmt(r['gap_pct'], 1)} % "
            f"| {sep} (p = {r['p_vs_best']:.3f}; {len(r['not_separated'])} not separated) "
            f"| {r['sweep_s']:.0f} s | {r['tune_s']:.0f} s{budget} | {r['ratio']:.2f} | {r['decision']} |")
    for r in rows:
        out += ["", f"{r['cell']}: the sweep's configurations ({r['metric']}, mean of the runs; "
                "p: Welch's t-test against the sweep's best, on the logarithm)", "",
                "| config | settings | mean | runs | p vs the best | |", "|---|---|---:|---:|---:|---|"]
        for c in sorted(r["sweep_configs"], key=lambda c: -(c["mean"] or 0)):
            mark = ("best" if c["config"] == r["sweep_best"] else
                    "not separated" if c["config"] in r["not_separated"] else "")
            if c["config"] == r["answer_config"]:
                mark += " ← the tuner's answer"
            p = "—" if c["p_vs_best"] is None else f"{c['p_vs_best']:.3f}"
            out.append(f"| {c['config']} | {'; '.join(c['settings'].values())} | {fmt(c['mean'])} "
                       f"| {c['runs']} | {p} | {mark.strip()} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fs", default="ext4")
    ap.add_argument("--workload", default="create")
    ap.add_argument("--space", type=pathlib.Path)
    ap.add_argument("--scale", type=float, default=0.01,
                    help="the data set's scale (with --cell-seconds: the first calibration's)")
    ap.add_argument("--cell-seconds", type=float,
                    help="choose each workload's scale so that one cell takes about this long "
                         "(calibrated; BENCHMARKS.md says which length keeps the spread low)")
    ap.add_argument("--fs-size")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--spread-runs", type=int, default=3,
                    help="runs of the defaults at the chosen scale, to print their run-to-run "
                         "spread (CV) and price the cells by their median (1: no spread)")
    ap.add_argument("--budget", default="15m",
                    help="the tune's budget, or `third`: a third of its own sweep's wall time "
                         "(less 5 %%)")
    ap.add_argument("--candidates", type=int)
    ap.add_argument("--out", type=pathlib.Path)
    ap.add_argument("--work-dir", type=pathlib.Path, default=pathlib.Path("/var/tmp/fsarena-tune-vs-sweep"))
    ap.add_argument("--fsarena", default=str(REPO / "target" / "release" / "fsarena"))
    ap.add_argument("--calibrate-only", action="store_true",
                    help="print the expected wall times and stop")
    args = ap.parse_args()
    args.budget = None if args.budget == "third" else parse_duration(args.budget)
    if args.space and "," in args.fs:
        sys.exit("tune_vs_sweep: --space names one file system's space; give one --fs with it")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    args.out = args.out or REPO / "bench" / "results" / f"tune-vs-sweep-{stamp}"
    args.out.mkdir(parents=True, exist_ok=True)
    args.work_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
    cells = [prepare(args.fsarena, fs, w, args)
             for fs in args.fs.split(",") for w in args.workload.split(",")]
    total = sum(c["expected"]["sweep"] + c["expected"]["tune"] for c in cells)
    most = sum(c["expected"]["sweep"] + c["expected"]["tune_max"] for c in cells)
    done = datetime.datetime.now() + datetime.timedelta(seconds=total)
    print(f"\nexpected wall time of the whole measurement: about {total / 60:.0f} min "
          f"(until about {done:%H:%M}) when every tune decides within a third of its sweep, "
          f"at most {most / 60:.0f} min when each spends its whole budget; cells already "
          f"measured in {args.out} are reused", flush=True)
    if args.calibrate_only:
        return
    rows = [measure(args.fsarena, c, args) for c in cells]
    (args.out / "table.json").write_text(json.dumps(rows, indent=1) + "\n")
    text = table(rows)
    (args.out / "table.md").write_text(text)
    print("\n" + text + f"\n(the rows as JSON: {args.out / 'table.json'})")


if __name__ == "__main__":
    main()
