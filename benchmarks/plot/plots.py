#!/usr/bin/env python3
"""plots.py BASE.dat BASE: the harness's plots with matplotlib (benchmarks/run
uses it when gnuplot is missing). BASE.dat: "program overhead_pct image_mib
ckpt_s restore_s" per line, NaN where missing. Draws BASE-overhead.png and,
when any checkpoint was measured, BASE-checkpoint.png."""
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, *vals = line.split()
            rows.append((name, [float(v) for v in vals]))
    return rows


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: plots.py BASE.dat BASE")
    rows = read(sys.argv[1])
    base = sys.argv[2]

    fig, ax = plt.subplots(figsize=(10, 6))
    names = [r[0] for r in rows]
    over = [r[1][0] for r in rows]
    ax.bar(range(len(rows)), [0 if math.isnan(v) else v for v in over], color="#3b6ea8")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(names, rotation=35, ha="right")
    ax.set_ylabel("overhead (%)")
    ax.set_title("gpuckpt runtime overhead per program (median runtime / median native - 1)")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.grid(axis="y", alpha=0.4)
    fig.tight_layout()
    fig.savefig(base + "-overhead.png")

    pts = [(n, v[1], v[2], v[3]) for n, v in rows if v[1] > 0 and not math.isnan(v[1])]
    if not pts:
        print("plots.py: no checkpoint measured: no checkpoint plot")
        return
    fig, ax = plt.subplots(figsize=(10, 6))
    for label, idx, marker, color in (("checkpoint", 2, "o", "#3b6ea8"),
                                      ("restore", 3, "s", "#c0392b")):
        xs = [p[1] for p in pts if not math.isnan(p[idx]) and p[idx] > 0]
        ys = [p[idx] for p in pts if not math.isnan(p[idx]) and p[idx] > 0]
        ax.scatter(xs, ys, marker=marker, color=color, label=label, s=50)
    for n, img, ck, _ in pts:
        if not math.isnan(ck) and ck > 0:
            ax.annotate(n, (img, ck), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("checkpoint image (MiB)")
    ax.set_ylabel("time (s)")
    ax.set_title("Checkpoint and restore time against image size")
    ax.grid(alpha=0.4)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(base + "-checkpoint.png")


if __name__ == "__main__":
    main()
