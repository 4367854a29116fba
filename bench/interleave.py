#!/usr/bin/env python3
"""The spread of two file systems' speed ratio, by how far apart in time their passes ran.

Usage: python3 bench/interleave.py FILE [--window S]

FILE holds one pass per line, `SECONDS-SINCE-START FS PASS-SECONDS FILES [ROUND]`, the file
systems taking turns (bench/interleave.sh writes it). Passes are grouped into windows of S
seconds (default 0.25, the phase floor), or by ROUND when the lines number their rounds (the
offsets below are then rounds), each file system's rate in a window being its files over its
passes' seconds. For each file system against the first one named, the table gives the
standard deviation of log(rate ratio) with both rates from the same window (passes
interleaved), and with the other's rate from a window OFFSET seconds later (cells measured one
after another). A ratio's log spread is the noise a comparison of the two must see through;
the first column against the others is what interleaving would buy.

Then, for each file system against the first, how often a comparison of n rounds (n = 3, 5,
8) is decided at the 1 % level (two-sided t): paired, each round one window's ratio (the two
sides interleaved in one phase), against unpaired, each side's n cells from windows drawn
apart (cells one after another). The same tree on both sides in every round: the spread a
fresh file system per round adds is not in it. Standard library only.
"""
import math
import random
import signal
import statistics
import sys

OFFSETS = [0, 0.25, 0.5, 1, 2, 5, 10, 25, 50]
ROUND_OFFSETS = [0, 1, 2, 5, 10, 25]

# Two-sided 1 % quantiles of Student's t by degrees of freedom (the nearest is taken).
T_01 = {2: 9.925, 3: 5.841, 4: 4.604, 5: 4.032, 6: 3.707, 7: 3.499, 8: 3.355, 10: 3.169,
        14: 2.977}
DRAWS = 4000


def t_crit(df):
    return T_01[min(T_01, key=lambda k: abs(k - df))]


def decided_shares(rates, fs, base, n, rnd, shift=0.0):
    """(paired, unpaired) shares of DRAWS comparisons of n rounds decided at 1 %, the
    candidate's logs moved by `shift` (to set the true difference)."""
    ws = sorted(rates)
    paired = unpaired = 0
    for _ in range(DRAWS):
        d = [math.log(rates[w][fs] / rates[w][base]) + shift for w in rnd.sample(ws, n)]
        sd = statistics.stdev(d)
        if sd > 0 and abs(statistics.mean(d)) / (sd / math.sqrt(n)) > t_crit(n - 1):
            paired += 1
        a = [math.log(rates[w][fs]) + shift for w in rnd.sample(ws, n)]
        b = [math.log(rates[w][base]) for w in rnd.sample(ws, n)]
        se = math.sqrt((statistics.variance(a) + statistics.variance(b)) / n)
        if se > 0 and abs(statistics.mean(a) - statistics.mean(b)) / se > t_crit(2 * n - 2):
            unpaired += 1
    return paired / DRAWS, unpaired / DRAWS


def windows(path, width):
    """{window index: {fs: [files, seconds]}}, and the file systems in order of appearance."""
    win, order = {}, []
    by_round = False
    for line in open(path):
        t, fs, seconds, files, *round_ = line.split()
        if fs not in order:
            order.append(fs)
        by_round = bool(round_)
        key = int(round_[0]) if round_ else int(float(t) // width)
        slot = win.setdefault(key, {})
        acc = slot.setdefault(fs, [0, 0.0])
        acc[0] += int(files)
        acc[1] += float(seconds)
    rates = {
        w: {fs: f / s for fs, (f, s) in v.items() if s > 0}
        for w, v in win.items()
        if all(v.get(fs, [0, 0])[1] > 0 for fs in order)
    }
    return rates, order, by_round


def main():
    args = sys.argv[1:]
    width = 0.25
    if "--window" in args:
        i = args.index("--window")
        width = float(args[i + 1])
        del args[i : i + 2]
    if len(args) != 1:
        sys.exit("usage: python3 bench/interleave.py FILE [--window S]")
    rates, order, by_round = windows(args[0], width)
    base = order[0]
    unit = "rounds" if by_round else f"windows of {width} s"
    print(f"{len(rates)} {unit}; rates (median, thousands of FILES per s): "
          + ", ".join(f"{fs} {statistics.median(r[fs] for r in rates.values()) / 1e3:.0f}"
                      for fs in order))
    print(f"log spread of the ratio, by the {'rounds' if by_round else 'time'} between "
          "the two sides:")
    print(("rounds  " if by_round else "offset s  ") + "  ".join(f"{fs}/{base:>5}" for fs in order))
    for off in ROUND_OFFSETS if by_round else OFFSETS:
        k = off if by_round else round(off / width)
        cells = []
        for fs in order:
            xs = [math.log(rates[w + k][fs] / rates[w][base]) for w in rates if w + k in rates]
            cells.append(statistics.pstdev(xs) if len(xs) > 1 else float("nan"))
        print((f"{off:6d}  " if by_round else f"{off:8.2f}  ")
              + "  ".join(f"{c:10.3f}" for c in cells))
    # The mean of each paired ratio over every window, with its t: for an A/A pair (one
    # type named twice) what the order alone does, which a joint cell must cancel.
    for fs in order[1:]:
        d = [math.log(r[fs] / r[base]) for r in rates.values()]
        t = statistics.mean(d) / (statistics.stdev(d) / math.sqrt(len(d)))
        print(f"  {fs}/{base} within the {'round' if by_round else 'window'}: "
              f"{100 * math.expm1(statistics.mean(d)):+.2f} % on average (t {t:.1f})")
    print("decided at 1 % in n rounds: interleaved (paired) against cells apart (unpaired):")
    rnd = random.Random(7)
    for fs in order[1:]:
        true = statistics.mean(math.log(r[fs] / r[base]) for r in rates.values())
        # As measured, then with the candidate moved to +5 % and +2 % (the same noise).
        for label, shift in ((f"{100 * math.expm1(true):+.1f} %", 0.0),
                             ("moved to +5 %", math.log(1.05) - true),
                             ("moved to +2 %", math.log(1.02) - true)):
            shares = [decided_shares(rates, fs, base, n, rnd, shift) for n in (3, 5, 8)]
            print(f"  {fs}/{base} ({label}): " + ", ".join(
                f"n={n} {p:.2f} vs {u:.2f}" for n, (p, u) in zip((3, 5, 8), shares)))


if __name__ == "__main__":
    # Piped into `head`, end quietly once the reader has gone.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
