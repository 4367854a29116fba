"""The table of bench/replay_corpus.py, from the JSON files its runs leave in --out.

A pair's error is paired by repetition: each repetition runs the replay on every file system
and then the program on each, minutes apart, so its own replay ratio over its own program
ratio is free of what moved the host between repetitions (its flush latency drifts by tens
of percent over half an hour, which sync-bound programs such as sqlite in rollback-journal
mode feel whole). The pair's error is the median of those per-repetition errors. The older
figure, the ratio of each kind's medians over all repetitions (unpaired), is printed beside
it. The paired estimator was adopted on 2026-11-30 before the sitting that first used it.
"""

import json
import os
import random
import statistics

BASE = "ext4"
TARGET, PAIR_CAP = 10.0, 20.0  # per-program mean error, any one pair (percent)
RESAMPLES = 2000  # bootstrap draws of a pair's repetitions


def rep_error(rep, fs, timing):
    """One repetition's signed error in percent: its replay ratio over its program ratio,
    minus 1; None when a run of the four is missing."""
    real = [rep["real"].get(f) for f in (fs, BASE)]
    again = [rep["replay"].get(timing, {}).get(f) for f in (fs, BASE)]
    if None in real + again:
        return None
    return ((again[0] / again[1]) / (real[0] / real[1]) - 1) * 100


def pair_error(reps, fs, timing):
    """The signed error of a pair (below 0 the replay found the file system relatively faster
    than the program did): the median of its repetitions' errors; None if none is whole."""
    errors = [e for e in (rep_error(r, fs, timing) for r in reps) if e is not None]
    return statistics.median(errors) if errors else None


def unpaired_error(reps, fs, timing):
    """The older estimator: replay ratio / program ratio - 1 in percent, each ratio from the
    medians of all repetitions; None if missing."""
    real = [median_of(reps, "real", f) for f in (fs, BASE)]
    rep = [median_of(reps, "replay", f, timing) for f in (fs, BASE)]
    if None in real + rep:
        return None
    return ((rep[0] / rep[1]) / (real[0] / real[1]) - 1) * 100


def error_interval(reps, fs, timing):
    """The 5th and 95th percentiles of a pair's signed error over repetitions drawn again
    with replacement (each repetition keeps its program and replay runs together): how far
    the machine alone moves the error at this many repetitions. With programs of 0.1-0.25 s
    it was 10-50 points wide, which is why the corpus's programs run a second or more."""
    rng = random.Random(f"{fs}/{timing}/{len(reps)}")
    draws = [pair_error([rng.choice(reps) for _ in reps], fs, timing) for _ in range(RESAMPLES)]
    draws = sorted(d for d in draws if d is not None)
    if len(draws) < RESAMPLES // 2:
        return None
    return draws[len(draws) // 20], draws[len(draws) * 19 // 20]


def median_of(reps, kind, fs, timing=None):
    xs = [r[kind][timing][fs] if timing else r[kind][fs] for r in reps
          if (r[kind].get(timing, {}) if timing else r[kind]).get(fs) is not None]
    return statistics.median(xs) if xs else None


def header(out, timings):
    chunks = json.load(open(os.path.join(out, "machine.json"))) if os.path.exists(
        os.path.join(out, "machine.json")) else []
    load = max((c["load_at_start"] for c in chunks), default=0.0)
    unsettled = sum(c["unsettled"] for c in chunks)
    when = ", ".join(sorted({c["when"] for c in chunks}))
    return [f"quiet: {'yes' if load <= 0.5 else 'no'} (load average at start up to {load:.2f}; "
            f"{unsettled} waits for an idle disk gave up after 5 s); measured {when}",
            f"ratio = file system's time / {BASE}'s; error = |replay ratio / program ratio - 1|, "
            f"the median over repetitions of each repetition's own (paired); the ratios shown "
            f"and the unpaired error are from medians over repetitions; replay timings: "
            f"{', '.join(timings)}",
            ""]


def program_rows(name, state, timings):
    """The table's rows for one program, and its errors per timing (None when not reproduced)."""
    reps = state["reps"]
    fss = [fs for fs in reps[0]["real"] if fs != BASE] if reps else []
    failed = state.get("failed", {})
    rows, errors = [], {t: [] for t in timings}
    for fs in fss:
        real = median_of(reps, "real", fs) / median_of(reps, "real", BASE)
        cells = [f"{real:.3f}"]
        for t in timings:
            num, den = median_of(reps, "replay", fs, t), median_of(reps, "replay", BASE, t)
            if failed.get(t) or num is None or den is None:
                # Not reproduced, or this timing not measured for this program.
                cells += ["—", "—", "—", "—"]
                continue
            rep = num / den
            err = abs(pair_error(reps, fs, t))
            errors[t].append(err)
            span = error_interval(reps, fs, t) if len(reps) > 2 else None
            span = "—" if span is None else f"{span[0]:+.1f} to {span[1]:+.1f} %"
            cells += [f"{rep:.3f}", f"{err:.1f} %", span, f"{abs(unpaired_error(reps, fs, t)):.1f} %"]
        rows.append(f"| {name} | {fs}/{BASE} | " + " | ".join(cells) + " |")
    for t in timings:
        if failed.get(t):
            rows.append(f"| {name} | not reproduced ({t}) | {failed[t]} |")
            errors[t] = None
    if state.get("real_failed"):
        rows.append(f"| {name} | the real program failed | {state['real_failed']} |")
    return rows, errors


def report(out, programs, timings):
    lines = header(out, timings)
    cols = "".join(f" replay ratio ({t}) | error, paired ({t}) | signed error, 90 % bootstrap "
                   f"interval ({t}) | error, unpaired ({t}) |" for t in timings)
    lines += [f"| program | pair | program ratio |{cols}", "|---|---|---|" + "---|---|---|---|" * len(
        timings)]
    summary, absolute, states = [], [], {}
    for prog in programs:
        path = os.path.join(out, prog.name + ".json")
        if not os.path.exists(path):
            continue
        state = states[prog.name] = json.load(open(path))
        rows, errors = program_rows(prog.name, state, timings)
        lines += rows
        summary.append((prog.name, len(state["reps"]), errors, state))
    lines += ["", "| program | runs | trace | " + " | ".join(
        f"mean error ({t}) | worst pair ({t})" for t in timings) + f" | {BASE} s: program | "
        + " | ".join(f"replay ({t})" for t in timings) + " |",
        "|---|---|---|" + "---|---|" * len(timings) + "---|" + "---|" * len(timings)]
    totals = {t: [] for t in timings}
    closeness = {t: [] for t in timings}
    for name, runs, errors, state in summary:
        counts = [f"{t} {sum(t in r['replay'] for r in state['reps'])}" for t in timings
                  if not state.get("failed", {}).get(t)]
        cells = [name, f"{runs}" + (f" (replays: {', '.join(counts)})" if counts else ""),
                 # A program whose measuring has not begun (its state seeded by hand) has none.
                 f"{state['trace_bytes'] / 1e6:.2f} MB" if "trace_bytes" in state else "—"]
        for t in timings:
            e = errors[t]
            if e is None or not e:
                cells += ["not reproduced" if e is None else "not measured", "—"]
                continue
            mean = sum(e) / len(e)
            totals[t].append(mean)
            ok = mean <= TARGET and max(e) <= PAIR_CAP
            cells += [f"{mean:.1f} %{'' if ok else ' (over target)'}", f"{max(e):.1f} %"]
        real = median_of(state["reps"], "real", BASE)
        if real is None:
            lines.append("| " + " | ".join(cells) + " | no complete repetition |")
            continue
        cells.append(f"{real:.3f}")
        for t in timings:
            rep = None if state.get("failed", {}).get(t) else median_of(
                state["reps"], "replay", BASE, t)
            cells.append("—" if rep is None else f"{rep:.3f}")
            if rep is not None:
                closeness[t].append(abs(rep / real - 1) * 100)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for t in timings:
        m = totals[t]
        c = closeness[t]
        if m:
            lines.append(f"timing {t}: {len(m)} programs reproduced; mean ratio error "
                         f"{sum(m) / len(m):.1f} % over them; {sum(x <= TARGET for x in m)} "
                         f"within {TARGET:.0f} %; the replay's {BASE} time is "
                         f"{statistics.median(c):.0f} % from the program's (median over programs)")
    return "\n".join(lines) + "\n"
