#!/usr/bin/env python3
# Offline planner check (session 23): for every shape of the given `prefixd_kernel_bench
# --planner-check` logs, which hold the measured cascade and plain totals, asks the local
# prefixd_kernel_bench (no GPU: the planner's choice and predictions only) what the planner chooses
# with the model file given (or '-': the built-in defaults and options of this build), and judges
# that choice by the logged times: a choice / min(cascade, plain, narrow and half-target cascades
# where logged) over 1.05 is printed SLOW; a choice other than those or the logged choice is
# UNTIMED (not judged). ('cascade t66' is the half target of the H200's 132.) Each shape is asked
# at its logged head_dim (session 43: before, every shape was asked at the default, 128).
# A log timed at another page size than 16 is given as PATH@N (session 75).
# Run from the repository root after building build/bench/prefixd_kernel_bench, e.g.
#   R=bench/kernel/results/s23
#   python3 bench/kernel/planner_offline_eval.py - $R/run4-heldout.txt $R/run4-heldout2.txt \
#     $R/run4-unseen.txt $R/run4-grid.txt
import re,sys,subprocess,collections
def parse(path):
    d={}
    for line in open(path):
        m=re.match(r'\s+(fp16|bf16)\s+(\d+)/(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+) \|\s+(\S+)\s+(\S+)\s+(\S+) (.{18,}?) \|',line)
        if m:
            g=m.groups()
            # (the choice's column is 18 wide before session 52, 22 after: a concurrent choice's name is longer)
            # session 24 on: the narrow cascade's time and prediction are the last two columns ('-': not timed)
            cols=line.split('|')
            narrow=half=float('nan')
            if len(cols)>=6 and cols[5].split() and cols[5].split()[0]!="-":
                narrow=float(cols[5].split()[0])
            # later in session 24: the half-target cascade's time and prediction after them
            if len(cols)>=7 and cols[6].split() and cols[6].split()[0]!="-":
                half=float(cols[6].split()[0])
            d[(g[0],g[1],g[2],g[4],g[5],g[6],g[3])]=(float(g[7]),float(g[8]) if g[8]!='-' else float('nan'),float(g[9]),g[10].strip(),narrow,half)
    return d
meas={}
page={}  # a log given as PATH@N was timed at page size N (the default, 16, otherwise)
for f in sys.argv[2:]:
    path,_,n=f.partition('@')
    got=parse(path)
    meas.update(got)
    for k in got: page[k]=n or '16'
model=sys.argv[1]  # a cost model file, or - for the built-in defaults
# rerun predictions offline for the same shape sets
bad=0;n=0;worst=0;unk=0;bad2=0;worst2=0
for k,(c,p,ch_us,ch,nw,hf) in sorted(meas.items()):
    args=['./build/bench/prefixd_kernel_bench','--planner-check','--heads',f'{k[1]}/{k[2]}','-b',k[3],'-p',k[4],'-s',k[5],'--dtype',k[0],'-d',k[6],'--page-size',page[k]]
    if model!='-': args+=['--cost-model',model]
    out=subprocess.run(args,capture_output=True,text=True).stdout
    m=[l for l in out.splitlines() if re.match(r'\s+(fp16|bf16)',l)][0]
    choice=m.split('|')[1][33:].strip() if False else re.split(r'\s*\|\s*',m)[1]
    name=choice.split()[3:]  # after three '-' columns
    name=' '.join(name)
    if name=='cascade': t=c
    elif name=='plain': t=p
    elif name=='narrow' and nw==nw: t=nw
    elif name=='cascade t66' and hf==hf: t=hf
    elif name==ch: t=ch_us
    else: t=None
    n+=1
    if t is None:
        unk+=1; print('UNTIMED',k,name); continue
    best=min(x for x in (c,p,nw,hf) if x==x)
    r=t/best; worst=max(worst,r)
    # the item 4: against the better of the cascade and plain decode (session 75)
    r2=t/min(x for x in (c,p) if x==x); worst2=max(worst2,r2); bad2+=r2>1.05
    if r>1.05: bad+=1; print('SLOW' if r2<=1.05 else 'SLOW2',k,name,c,p,round(r,3),round(r2,3))
print(f'model {model}: {n} shapes, over 5%: {bad}, untimed choices: {unk}, worst {worst:.3f}; '
      f'against min(cascade, plain): over 5%: {bad2}, worst {worst2:.3f}')
