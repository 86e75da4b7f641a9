#!/usr/bin/env bash
# Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
#
# Benchmark of mjdiff-sysid's optimisers on the scripted identification cases (scripts/sysid_arm.sh,
# sysid_box.sh, sysid_hopper.sh: the same recordings and fit arguments): exact-gradient
# Levenberg-Marquardt (lm), finite-difference LM (fd-lm) and Nelder-Mead, run one after another in
# one run. Per case and method: wall time and rollouts (window simulations) until the loss first
# comes within --tol of the best final loss of all methods ("the same fit"), read from the
# progress lines on stderr (timestamped as they arrive; rollouts = evaluations so far x windows),
# and the final loss, iterations, status and largest parameter error against the truth.
# t/t_lm = a method's time to the fit / lm's. A run stops at its time budget (SIGINT: the tool
# writes its partial report; SIGKILL 15 s later if it has not stopped, and the progress lines give
# the final loss); Nelder-Mead gets at most --nm-factor times lm's wall time.
#   scripts/bench_sysid.sh [--cases arm,box,hopper] [--methods lm,fd-lm,nelder-mead]
#                          [--budget S] [--nm-factor F] [--tol T] [--json FILE | --out FILE]
# Defaults: all cases and methods, budget 1800 s, nm-factor 10 (at least 60 s), tol 0.01 (1%),
# JSON to out/bench_sysid/bench_sysid.json. Per run a report and a timestamped log, and the table
# (table.txt), in out/bench_sysid/.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cases=arm,box,hopper
methods=lm,fd-lm,nelder-mead
budget=1800
nm_factor=10
tol=0.01
json="$root/out/bench_sysid/bench_sysid.json"

usage() {
  awk 'NR > 3 && /^#/ { sub(/^# ?/, ""); print; next } NR > 3 { exit }' "${BASH_SOURCE[0]}"
}
number() {
  [[ $2 =~ ^[0-9]+([.][0-9]*)?([eE][-+]?[0-9]+)?$ ]] || {
    echo "bench_sysid: $1 must be a positive number, got '$2'" >&2
    exit 2
  }
}
while [[ $# -gt 0 ]]; do
  case $1 in
    --help | -h) usage; exit 0 ;;
    --cases | --methods | --budget | --nm-factor | --tol | --json | --out)
      [[ $# -ge 2 ]] || { echo "bench_sysid: $1 needs a value" >&2; exit 2; }
      case $1 in
        --cases) cases=$2 ;;
        --methods) methods=$2 ;;
        --budget) number "$1" "$2"; budget=$2 ;;
        --nm-factor) number "$1" "$2"; nm_factor=$2 ;;
        --tol) number "$1" "$2"; tol=$2 ;;
        --json | --out) json=$2 ;;
      esac
      shift 2 ;;
    *) echo "bench_sysid: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
IFS=, read -r -a caselist <<<"$cases"
IFS=, read -r -a methodlist <<<"$methods"
for c in "${caselist[@]}"; do
  [[ $c == arm || $c == box || $c == hopper ]] ||
    { echo "bench_sysid: unknown case '$c' (arm, box, hopper)" >&2; exit 2; }
done
for m in "${methodlist[@]}"; do
  [[ $m == lm || $m == fd-lm || $m == nelder-mead ]] ||
    { echo "bench_sysid: unknown method '$m' (lm, fd-lm, nelder-mead)" >&2; exit 2; }
done
[[ $json == /* ]] || json="$PWD/$json"

# recordings and fit arguments of the cases (builds mjdiff-sysid if needed)
for c in "${caselist[@]}"; do
  "$root/scripts/sysid_$c.sh" --data-only
done

python3 - "$root" "$json" "$budget" "$nm_factor" "$tol" "$cases" "$methods" <<'EOF'
import json, os, re, signal, subprocess, sys, threading, time
root, json_path = sys.argv[1], sys.argv[2]
budget, nm_factor, tol = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
cases, methods = sys.argv[6].split(','), sys.argv[7].split(',')
sysid = os.path.join(root, 'build', 'tools', 'mjdiff-sysid')
outdir = os.path.join(root, 'out', 'bench_sysid')
os.makedirs(outdir, exist_ok=True)
GRACE = 15                     # seconds between SIGINT and SIGKILL
line_re = re.compile(r'(?:\[window \d+\] )?\s*(\d+)\s+([-+0-9.eE]+)\s+\S+\s+\S+\s+(\d+)\s*$')

def run(case, method, args, limit):
    """run one fit; returns the report and the progress [(t_s, iter, F, evals)]"""
    report = os.path.join(outdir, f'{case}_{method}.json')
    log = open(os.path.join(outdir, f'{case}_{method}.log'), 'w', buffering=1)
    cmd = [sysid] + args + ['--method', method, '--out', report]
    if os.path.exists(report):
        os.remove(report)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    def stop():                # SIGINT (partial report); SIGKILL if it does not stop
        p.send_signal(signal.SIGINT)
        try:
            p.wait(GRACE)
        except subprocess.TimeoutExpired:
            p.kill()
    timer = threading.Timer(limit, stop)
    timer.start()
    progress, nvar = [], None
    for line in iter(p.stderr.readline, ''):
        t = time.monotonic() - t0
        log.write(f'{t:10.3f} {line}')
        m = line_re.match(line)
        if m:
            progress.append((t, int(m[1]), float(m[2]), int(m[3])))
        m = re.search(r'(\d+) variables', line)
        if m and nvar is None:
            nvar = int(m[1])
    code = p.wait()
    timer.cancel()
    wall = time.monotonic() - t0
    log.close()
    stopped = wall >= limit
    if code not in (0, 3, 4, 130) and not (stopped and code == -signal.SIGKILL):  # 3, 4: not converged, unreliable
        sys.exit(f'bench_sysid: {case} {method}: mjdiff-sysid exited {code} (see {log.name})')
    if os.path.exists(report):
        rep = json.load(open(report))
    else:                      # killed: what the progress lines tell
        last = progress[-1] if progress else (wall, 0, float('nan'), 0)
        rep = dict(status='killed', metrics=dict(
            loss_before=progress[0][2] if progress else None, loss_after=last[2],
            iterations=last[1], evaluations=last[3], jacobians=0, rollouts=None,
            residuals=None, wall_s=wall, parameters=[]))
    return rep, progress, wall, stopped, nvar

sys.stdout.reconfigure(line_buffering=True)
results = []
for case in cases:
    d = os.path.join(root, 'out', f'sysid_{case}')
    args = [a for a in open(os.path.join(d, 'fit_args')).read().split('\n') if a]
    truth = dict(l.rsplit('=', 1) for l in open(os.path.join(d, 'truth')).read().split('\n') if l)
    runs = {}
    for method in methods:
        limit = budget
        if method == 'nelder-mead' and 'lm' in runs:
            limit = min(budget, max(60.0, nm_factor * runs['lm']['wall']))
        print(f'bench_sysid: {case} {method} (budget {limit:.0f} s)', file=sys.stderr, flush=True)
        rep, prog, wall, stopped, nvar = run(case, method, args, limit)
        mt = rep['metrics']
        calls = mt['evaluations'] + mt['jacobians']
        windows = round(mt['rollouts'] / calls) if calls and mt['rollouts'] else None
        if windows is None:    # a killed run: the windows of another run of the case
            windows = next((r['windows'] for r in runs.values() if r['windows']), None)
        if mt['rollouts'] is None and windows:
            mt['rollouts'] = mt['evaluations'] * windows
        runs[method] = dict(report=rep, progress=prog, wall=wall, stopped=stopped, nvar=nvar,
                            windows=windows)
    best = min(r['report']['metrics']['loss_after'] for r in runs.values())
    target = best * (1 + tol)
    first = next(iter(runs.values()))
    case_res = dict(case=case, model=next(a for a in args if a.endswith('.xml')),
                    data=[a for a in args if a.endswith('.csv')],
                    parameters=len(first['report']['metrics']['parameters']),
                    variables=first['nvar'], windows=first['windows'],
                    residuals=first['report']['metrics']['residuals'],
                    best_loss=best, target_loss=target, methods=[])
    for method, r in runs.items():
        mt = r['report']['metrics']
        hit = next((x for x in r['progress'] if x[2] <= target), None)
        errs = [abs(p['fitted'] - float(truth[p['name']])) / abs(float(truth[p['name']]))
                for p in mt['parameters'] if p['name'] in truth and float(truth[p['name']])]
        case_res['methods'].append(dict(
            method=method, reached=hit is not None,
            time_to_fit_s=hit[0] if hit else None,
            rollouts_to_fit=hit[3] * r['windows'] if hit and r['windows'] else None,
            iterations_to_fit=hit[1] if hit else None,
            loss_after=mt['loss_after'], iterations=mt['iterations'], rollouts=mt['rollouts'],
            wall_s=r['wall'], status=(f"budget ({r['report']['status']})" if r['stopped'] else r['report']['status']),
            max_param_error=max(errs) if errs else None))
    lm = next((m for m in case_res['methods'] if m['method'] == 'lm' and m['reached']), None)
    for m in case_res['methods']:
        m['slowdown_vs_lm'] = (m['time_to_fit_s'] / lm['time_to_fit_s']
                               if lm and m['reached'] else None)
    results.append(case_res)

# table (also to out/bench_sysid/table.txt)
lines = []
def show(line=''):
    print(line)
    lines.append(line)
show(f'mjdiff-sysid optimisers: time and rollouts to the same fit (loss within {100 * tol:g}% '
      'of the best final loss)')
fmt = '{:<7} {:>3} {:>4} {:<12} {:>11} {:>9} {:>7} {:>11} {:>9} {:>9} {:<17}'
show(fmt.format('case', 'np', 'nvar', 'method', 'time (s)', 'rollouts', 't/t_lm', 'final loss',
                 'param err', 'total (s)', 'status'))
for c in results:
    for m in c['methods']:
        f = lambda x, s: '-' if x is None else s.format(x)
        show(fmt.format(c['case'], c['parameters'], f(c['variables'], '{:d}'), m['method'],
                         f(m['time_to_fit_s'], '{:.2f}') if m['reached'] else 'not reached',
                         f(m['rollouts_to_fit'], '{:d}'), f(m['slowdown_vs_lm'], '{:.1f}'),
                         f'{m["loss_after"]:.6g}', f(m['max_param_error'], '{:.2%}'),
                         f'{m["wall_s"]:.1f}', m['status']))
version = next(iter(runs.values()))['report'].get('version') if results else None
doc = dict(tool='bench_sysid.sh', version=version, model=[c['model'] for c in results],
           args=dict(cases=cases, methods=methods, budget_s=budget, nm_factor=nm_factor, tol=tol),
           status='ok', metrics=dict(cases=results), series={})
os.makedirs(os.path.dirname(json_path) or '.', exist_ok=True)
with open(json_path + '.tmp', 'w') as f:
    json.dump(doc, f, indent=1)
os.replace(json_path + '.tmp', json_path)
with open(os.path.join(outdir, 'table.txt'), 'w') as f:
    f.write('\n'.join(lines) + '\n')
print(f'bench_sysid: wrote {json_path}, {os.path.join(outdir, "table.txt")}')
EOF
