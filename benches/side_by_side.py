"""Runs saseval-gen's assemble stage and any external command on the same candidate file and
prints how their wall time and peak memory compare, so a claim like "N times faster than a
Python pipeline" can be checked — against benches/reference/assemble.py by default, or
against your own pipeline.

Usage:
    python3 benches/side_by_side.py CANDIDATES.jsonl [--saseval BINARY] [--runs N]
        [--json PATH] [-- EXTERNAL COMMAND ...]

    # against the Python reference (pip install -r benches/reference/requirements.txt):
    python3 benches/side_by_side.py target/bench/work/candidates-10000/candidates.jsonl
    # against your own pipeline: {input} is the candidate file, {out} a fresh empty folder
    python3 benches/side_by_side.py candidates.jsonl -- my-pipeline dedup {input} -o {out}

saseval-gen runs as `BINARY --config pipeline.toml --out DIR --quiet --set
release.date=2026-11-29 --set audit.models=[] assemble` in a fresh DIR holding the candidates as
repaired.jsonl (the copy is not timed); BINARY defaults to target/release/saseval-gen. Each run
is a child process of its own: wall time is measured around it, and peak memory two ways:
  * process: `os.wait4`'s ru_maxrss, the largest peak RSS of the child and the descendants it
    waited for (a maximum, not a sum; never below this script's ~15 MB, inherited at spawn);
  * tree: the child and its descendants' RSS summed, sampled every 50 ms from /proc (and at
    least the process figure). Pages shared between processes (libraries, copy-on-write pages
    after fork) count once per process, so this is an upper bound, the process figure a lower.
Ratios are external / saseval-gen, from the best (minimum) of the runs; memory uses the tree.
Linux only; Python standard library only.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REFERENCE = [sys.executable, str(REPO / "benches/reference/assemble.py"), "{input}", "{out}"]
SAMPLE_EVERY_S = 0.05
PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20


def tree_rss_mb(pid):
    """The RSS of pid and its descendants summed, in MB (0 for processes already gone)."""
    total, pending = 0.0, [pid]
    while pending:
        pid = pending.pop()
        try:
            with open(f"/proc/{pid}/statm") as statm:
                total += int(statm.read().split()[1]) * PAGE_MB
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as children:
                    pending.extend(int(child) for child in children.read().split())
        except (OSError, ValueError):
            continue
    return total


def measure(command):
    """Runs command in a child: its wall time in s and peak RSS in MB (process, tree)."""
    with tempfile.TemporaryFile() as stderr:
        started = time.monotonic()
        try:
            child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
        except OSError as error:
            sys.exit(f"side_by_side: cannot run {shlex.join(command)}: {error}")
        done, tree_peak = threading.Event(), [0.0]

        def sample():
            while True:
                tree_peak[0] = max(tree_peak[0], tree_rss_mb(child.pid))
                if done.wait(SAMPLE_EVERY_S):
                    return

        sampler = threading.Thread(target=sample)
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall_s = time.monotonic() - started
        done.set()
        sampler.join()
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            stderr.seek(0)
            tail = b"".join(stderr.readlines()[-20:]).decode(errors="replace")
            sys.exit(
                f"side_by_side: exit code {child.returncode} from {shlex.join(command)}\n{tail}"
            )
    process_mb = usage.ru_maxrss / 1024  # KiB on Linux
    return wall_s, process_mb, max(tree_peak[0], process_mb)


def run_external(template, candidates):
    with tempfile.TemporaryDirectory(prefix="side_by_side.") as out:
        return measure(
            [arg.replace("{input}", str(candidates)).replace("{out}", out) for arg in template]
        )


def run_saseval(binary, candidates):
    with tempfile.TemporaryDirectory(prefix="side_by_side.") as out:
        shutil.copyfile(candidates, Path(out) / "repaired.jsonl")
        return measure([
            str(binary), "--config", str(REPO / "pipeline.toml"), "--out", out, "--quiet",
            "--set", "release.date=2026-11-29", "--set", "audit.models=[]", "assemble",
        ])


def span(values, digits):
    low, high = (f"{value:.{digits}f}" for value in (min(values), max(values)))
    return low if low == high else f"{low}–{high}"


def cells(runs):
    """Wall time and peak RSS (process / tree) table cells, as min–max over the runs."""
    def column(key, digits):
        return span([run[key] for run in runs], digits)
    return f"{column('wall_s', 2)} | {column('peak_rss_mb', 0)} / {column('tree_peak_rss_mb', 0)}"


def main():
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    external = argv[split + 1 :] or REFERENCE
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        usage="%(prog)s CANDIDATES.jsonl [options] [-- COMMAND ...]",
    )
    parser.add_argument("candidates", type=Path)
    parser.add_argument("--saseval", type=Path, default=REPO / "target/release/saseval-gen")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = parser.parse_args(argv[:split])
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    candidates = args.candidates.resolve()
    for path in (candidates, args.saseval):
        if not path.is_file():
            parser.error(f"{path} is not a file")
    with candidates.open("rb") as lines:
        count = sum(1 for line in lines if line.strip())

    sides = {"external": [], "saseval-gen": []}
    for run in range(1, args.runs + 1):
        measured = {
            "external": run_external(external, candidates),
            "saseval-gen": run_saseval(args.saseval, candidates),
        }
        for side, (wall_s, process_mb, tree_mb) in measured.items():
            sides[side].append(
                {"wall_s": wall_s, "peak_rss_mb": process_mb, "tree_peak_rss_mb": tree_mb}
            )
            print(f"side_by_side: {side} run {run}/{args.runs}: {wall_s:.2f} s, peak RSS "
                  f"{process_mb:.0f} MB (tree {tree_mb:.0f} MB)", file=sys.stderr)

    best = {side: {key: min(run[key] for run in runs) for key in runs[0]}
            for side, runs in sides.items()}
    speed = best["external"]["wall_s"] / best["saseval-gen"]["wall_s"]
    memory = best["external"]["tree_peak_rss_mb"] / best["saseval-gen"]["tree_peak_rss_mb"]

    print("| N candidates | external wall s | external peak RSS MB (process / tree) "
          "| saseval-gen wall s | saseval-gen peak RSS MB (process / tree) "
          "| speed ratio (external/saseval) | memory ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {count:,} | {cells(sides['external'])} | {cells(sides['saseval-gen'])} "
          f"| {speed:.1f}× | {memory:.1f}× |")
    if args.json:
        args.json.write_text(json.dumps({
            "candidates": count,
            "external_command": external,
            "saseval_binary": str(args.saseval),
            "runs": sides,
            "speed_ratio": speed,
            "memory_ratio": memory,
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
