#!/usr/bin/python3
"""Plots prefixd_scaling_bench CSV rows: strong and weak scaling, and exposed communication.

    /usr/bin/python3 bench/scaling/plot.py scaling.csv -o scaling.png [--title "4 x H200"]

(/usr/bin/python3: Debian's interpreter, which sees Debian's python3-matplotlib.)
Rows are grouped by (mode, prefix or prefix per GPU, batch, suffix, layers, reduction, chunks,
split); each group is one line over its GPU counts.
"""
import argparse
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"plot.py: {path} has no rows")
    for r in rows:
        for k in ("gpus", "prefix", "batch", "suffix", "layers"):
            r[k] = int(r[k])
        for k in ("step_ms", "compute_ms", "exposed_ms", "exposed_pct"):
            r[k] = float(r[k])
        r["efficiency"] = float(r["efficiency"]) if r["efficiency"] else None
    return rows


def groups(rows, mode):
    out = defaultdict(list)
    for r in rows:
        if r["mode"] != mode:
            continue
        size = r["prefix"] if mode == "strong" else r["prefix"] // r["gpus"]
        label = (f"{'P' if mode == 'strong' else 'P/GPU'}={size} B={r['batch']} S={r['suffix']} "
                 f"L={r['layers']} {r['reduction']}" + (f" x{r['chunks']}" if r.get("chunks", "1") != "1" else "")
                 + (" split" if r.get("split", "0") == "1" else "")
                 + (f" h{r['head_chunks']}" if r.get("head_chunks", "1") not in ("1", "") else "")
                 + (" ahead" if r.get("run_ahead", "0") == "1" else "")
                 + (" whole-cascade" if r.get("send_first", "1") == "0" else ""))
        out[label].append(r)
    for label in out:
        out[label].sort(key=lambda r: r["gpus"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("-o", "--output", default="scaling.png")
    ap.add_argument("--title", default="")
    args = ap.parse_args()
    rows = load(args.csv)
    fig, ax = plt.subplots(2, 2, figsize=(18, 11))
    for mode, col in (("strong", 0), ("weak", 1)):
        g = groups(rows, mode)
        top, bottom = ax[0][col], ax[1][col]
        for label, rs in g.items():
            x = [r["gpus"] for r in rs]
            line, = top.plot(x, [r["step_ms"] for r in rs], "o-", label=label + " step")
            top.plot(x, [r["compute_ms"] for r in rs], "x--", color=line.get_color(), label=label + " no-op comm")
            eff = [(r["gpus"], r["efficiency"]) for r in rs if r["efficiency"] is not None]
            if eff:
                bottom.plot([e[0] for e in eff], [100 * e[1] for e in eff], "o-", color=line.get_color(),
                            label=label + " efficiency")
            bottom.plot(x, [r["exposed_pct"] for r in rs], "s:", color=line.get_color(),
                        label=label + " exposed comm")
        top.set_title(f"{mode} scaling: step time")
        top.set_xlabel("GPUs")
        top.set_ylabel("ms per decode step (log)")
        top.set_yscale("log")
        bottom.set_title(f"{mode} scaling: efficiency and exposed communication")
        bottom.set_xlabel("GPUs")
        bottom.set_ylabel("% (efficiency vs 1 GPU; exposed comm / step)")
        bottom.axhline(100, color="grey", lw=0.5)
        for a in (top, bottom):
            if g:
                a.set_xscale("log", base=2)
                a.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
            else:
                a.text(0.5, 0.5, f"no {mode} rows", ha="center", va="center", transform=a.transAxes)
            a.grid(True, alpha=0.3)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"plot.py: wrote {args.output} ({len(rows)} rows)")


if __name__ == "__main__":
    main()
