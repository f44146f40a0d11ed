#!/usr/bin/python3
"""Per-step device timeline from prefixd_cupti_trace files (bench/trace/cupti_trace.cc).

  timeline.py trace.<pid>.csv [...] [--marker FillSyntheticKv | --flush-mib 200] [--top 2]

Splits each process's activities (sorted by start) into steps at every start of a kernel whose
name contains --marker (prefixd's decode step appends its tokens' K/V once per step with
FillSyntheticKvKernel), or with --flush-mib at every memset of at least that many MiB (the kernel
benchmark's L2 flush before each timed iteration; the step then starts at the flush, and the
concurrent prefix/decode's two streams stay in one step). Steps with the same sequence of (kind, stream, name) form one signature;
for the --top most frequent signatures it prints, per position in the step, the median start
offset from the step's start, the median duration, the median gap to the previous activity's
end on the whole device (idle time when positive), the stream and a short name; then the median
step length and the device's busy time (union of all activities) per step.
"""
import argparse
import collections
import csv
import re
import statistics


def short(name):
    name = name.replace("(anonymous namespace)::", "")
    name = re.sub(r"\(.*", "", name)  # drop the parameter list
    name = re.sub(r"<.*>", "<>", name)
    name = name.split("::")[-1]
    return name[:48]


def load(path):
    acts = []
    with open(path) as f:
        for r in csv.DictReader(f):
            acts.append((int(r["start"]), int(r["end"]), r["kind"], int(r["stream"]), short(r["name"]),
                         int(r["grid"]), int(r["bytes"] or 0)))
    acts.sort()
    return acts


def split_steps(acts, marker, flush_bytes=0):
    steps, cur = [], None
    for a in acts:
        starts_step = a[2] == "memset" and a[6] >= flush_bytes if flush_bytes else a[2] == "kernel" and marker in a[4]
        if starts_step:
            if cur:
                steps.append(cur)
            cur = []
        if cur is not None:
            cur.append(a)
    return steps  # the last (possibly partial) step is dropped


def busy(step):
    total, end = 0, None
    for s, e, *_ in step:
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def report(path, marker, top, flush_bytes=0):
    steps = split_steps(load(path), marker, flush_bytes)
    groups = collections.defaultdict(list)
    for i, st in enumerate(steps):
        groups[tuple((a[2], a[3], a[4]) for a in st)].append((i, st))
    print(f"== {path}: {len(steps)} steps, {len(groups)} signatures")
    for sig, members in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:top]:
        idx = [i for i, _ in members]
        print(f"-- signature of {len(members)} steps (step indices {idx[0]}..{idx[-1]}), {len(sig)} activities")
        print(f"{'#':>3} {'start_us':>9} {'dur_us':>8} {'gap_us':>8} {'stream':>6} {'grid':>6}  name")
        for p in range(len(sig)):
            starts, durs, gaps = [], [], []
            for _, st in members:
                t0 = st[0][0]
                s, e = st[p][0], st[p][1]
                prev_end = max((a[1] for a in st[:p]), default=s)
                starts.append((s - t0) / 1e3)
                durs.append((e - s) / 1e3)
                gaps.append((s - prev_end) / 1e3)
            a = members[0][1][p]
            print(f"{p:>3} {statistics.median(starts):9.1f} {statistics.median(durs):8.1f} "
                  f"{statistics.median(gaps):8.1f} {a[3]:>6} {a[5]:>6}  {a[2]}:{a[4]}")
        lengths, busies = [], []
        for i, st in members:
            if i + 1 < len(steps):
                lengths.append((steps[i + 1][0][0] - st[0][0]) / 1e3)
            busies.append(busy(st) / 1e3)
        if lengths:
            print(f"   step length (start to next step's start) median {statistics.median(lengths):.1f} us; "
                  f"device busy median {statistics.median(busies):.1f} us")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--marker", default="FillSyntheticKv")
    ap.add_argument("--flush-mib", type=int, default=0,
                    help="split steps at memsets of at least this many MiB instead of at --marker kernels")
    ap.add_argument("--top", type=int, default=2)
    args = ap.parse_args()
    for path in args.traces:
        report(path, args.marker, args.top, args.flush_mib << 20)


if __name__ == "__main__":
    main()
