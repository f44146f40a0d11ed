#!/usr/bin/env python3
# Session 83's readings of committed GPU logs (no GPU needed), bench/RESULTS.md "Session 83":
#  1. the measured choice's own time of the cascade (constant queries, its interleaved median of 7)
#     against the benchmark's step (random queries) over s81 run 2's grid and head_dim rows where
#     it kept the cascade;
#  2. the half-target cascade against the cascade at 32/32 B256 P32768: the measured choice's own
#     times (s77 run 6, s81 run 2) and the planner check's (s82 run 1, half timed after plain);
#  3. the offline refit's four folds (fit on three of s82 run 1's planner-check logs, judge the
#     fourth) with the kernel bench's --fit-logs, after building build/bench/prefixd_kernel_bench.
# Run from the repository root: python3 bench/kernel/sessions/s83-log-readings.py
import os, re, statistics, subprocess, sys, tarfile, tempfile

R = 'bench/kernel/results'
tmp = tempfile.mkdtemp()
for run in ('s77/run6', 's81/run2'):
    with tarfile.open(f'{R}/{run}.tgz') as t:
        t.extractall(os.path.join(tmp, run.replace('/', '-')))

ROW = re.compile(r'\s+(fp16|bf16)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+) \|\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)')
CHOICE = re.compile(r'measured-choice\((\w+); timed ([^)]*)\)')

def grid_rows(run):
    for name in ('grid.txt', 'dims.txt'):
        path = os.path.join(tmp, run, 'grid', name)
        if not os.path.exists(path):
            continue
        for line in open(path):
            m, c = ROW.match(line), CHOICE.search(line)
            if m and c:
                times = {k: float(v) for k, v in re.findall(r'(\w+) ([\d.]+) us', c.group(2))}
                yield m.groups(), float(m.group(11)), c.group(1), times

print('1. s81 run 2: the measured choice\'s cascade time / the benchmark\'s step, where it kept the cascade')
ratios = [t['cascade'] / total for g, total, kept, t in grid_rows('s81-run2') if kept == 'cascade' and 'cascade' in t]
print(f'   {len(ratios)} rows: {min(ratios):.3f} - {max(ratios):.3f}, median {statistics.median(ratios):.3f}')

print('2. 32/32 B256 P32768: half / cascade (µs)')
for run in ('s77-run6', 's81-run2'):
    for g, total, kept, t in grid_rows(run):
        if g[2] == '32/32' and g[3] == '128' and g[4] == '256' and g[5] == '32768' and 'half' in t:
            print(f'   {run} measured choice {g[0]} S{g[6]}: half {t["half"]} / cascade {t["cascade"]}')
for dt in ('fp16', 'bf16'):
    for line in open(f'{R}/s82/run1/grid-{dt}.txt'):
        cols = line.split('|')
        w = cols[0].split()
        if len(w) == 6 and w[1] == '32/32' and w[3] == '256' and w[4] == '32768':
            print(f'   s82-run1 planner check {dt} S{w[5]}: half {cols[6].split()[0]} / cascade {cols[1].split()[0]}'
                  ' (the half timed after plain decode)')

print('3. the refit\'s folds (RMS ln-error and choices over 5% on the held-out log: built-in, then refit)')
B = './build/bench/prefixd_kernel_bench'
logs = [f'{R}/s82/run1/grid-fp16.txt', f'{R}/s82/run1/grid-bf16.txt', f'{R}/s82/run1/odd-fp16.txt',
        f'{R}/s82/run1/odd-bf16.txt@8']
if not os.path.exists(B):
    sys.exit(f'   {B} not built: skipped')
def summary(args):
    out = subprocess.run([B] + args, capture_output=True, text=True, check=True).stdout
    return ' | '.join(l.strip('# ') for l in out.splitlines() if l.startswith('#   all') or "model's choice:" in l)
for i, held in enumerate(logs):
    model = os.path.join(tmp, f'fold{i}.txt')
    subprocess.run([B, '--fit-logs', ','.join(l for l in logs if l != held), '--calibrate', model],
                   capture_output=True, check=True)
    print(f'   held out {held}:\n     built-in: {summary(["--fit-logs", held])}\n'
          f'     refit:    {summary(["--fit-logs", held, "--cost-model", model])}')
