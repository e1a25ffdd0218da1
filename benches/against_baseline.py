"""Runs this checkout's scale bench cases beside the same cases of an older build, one after
the other in the same session, so that a target stated in seconds can be read on a machine whose
speed drifts: the build a target was set against is timed again now, on the same machine.

Usage:
    python3 benches/against_baseline.py [--baseline COMMIT] [--rounds N]

The baseline defaults to f15b5d5, the build issue 17 measured when it set its targets (parse +
validate with ingest 2.5 s, assemble at 1M 20.7 s). It is checked out as a git worktree under
target/baseline/ and built there without the local backend (the scale bench does not use it).
Each build measures its own synthetic inputs, which its own bench wrote: the first run lets the
baseline's bench write them with its full run (~15 min); later runs reuse them. The current
build's inputs are the ones `cargo bench --bench scale` keeps under target/bench/work.

Every case runs in a fresh child process, baseline and current alternating, N rounds. Parse +
validate is timed by the child's own ingest and derive timings; assemble by the child's wall
time (both builds copy the candidates into a fresh run folder inside it). Peak RSS comes from
`os.wait4`. Prints each run, then per case the median of each build and the ratio
current / baseline. Linux only; Python standard library only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CASES = [
    ("parse_validate", 50_000, "output"),
    ("assemble", 100_000, "candidates"),
    ("assemble", 1_000_000, "candidates"),
]


def bench_binary(crate, target_dir, features):
    """Builds crate's scale bench and returns the path of its executable."""
    command = ["cargo", "bench", "--bench", "scale", "--no-run", "--message-format=json", *features]
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir))
    built = subprocess.run(command, cwd=crate, env=env, check=True, stdout=subprocess.PIPE, text=True)
    for line in built.stdout.splitlines():
        message = json.loads(line)
        if message.get("reason") == "compiler-artifact" and message.get("executable") and \
                message["target"]["name"] == "scale":
            return message["executable"]
    sys.exit(f"cargo built no scale bench executable in {crate}")


def baseline_tree(commit):
    """A worktree of commit, created on first use outside this checkout (cargo would take it
    for a member of this workspace)."""
    tree = Path(tempfile.gettempdir()) / f"saseval-gen-baseline-{commit}"
    if not tree.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), commit], cwd=REPO,
                       check=True)
    return tree


def run_case(binary, crate, case, size, work):
    """One child run; returns (seconds, peak RSS in MB, what the child reported)."""
    inputs = work / f"{'output' if case == 'parse_validate' else 'candidates'}-{size}"
    started = time.perf_counter()
    child = subprocess.Popen([binary, "--case", case, str(size), str(inputs)], cwd=crate,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    stdout = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        sys.exit(f"{binary} --case {case} {size} failed (status {status})")
    reported = json.loads(stdout.strip().splitlines()[-1])
    seconds = reported["ingest_s"] + reported["derive_s"] if case == "parse_validate" else wall
    return seconds, usage.ru_maxrss / 1024, reported


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="f15b5d5")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    tree = baseline_tree(args.baseline)
    old_target = REPO / "target/baseline" / f"target-{args.baseline}"
    old_bench = bench_binary(tree, old_target, ["--no-default-features"])
    new_bench = bench_binary(REPO, REPO / "target", [])
    old_work = old_target / "bench/work"
    new_work = REPO / "target/bench/work"
    if not (old_work / "candidates-1000000").exists():
        print(f"writing the baseline's inputs with its own full bench run in {old_work} ...")
        env = dict(os.environ, SASEVAL_BENCH_OUT=str(old_target / "bench"))
        subprocess.run([old_bench], cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    missing = [f"{kind}-{size}" for _, size, kind in CASES if not (new_work / f"{kind}-{size}").exists()]
    if missing:
        sys.exit(f"no inputs {missing} under {new_work}: run `cargo bench --bench scale` first")

    builds = [(args.baseline, old_bench, tree, old_work), ("current", new_bench, REPO, new_work)]
    timings = {}
    for round_ in range(1, args.rounds + 1):
        for case, size, _ in CASES:
            for name, binary, crate, work in builds:
                seconds, rss, _ = run_case(binary, crate, case, size, work)
                timings.setdefault((case, size, name), []).append((seconds, rss))
                print(f"round {round_}  {case} {size:>9,}  {name:>8}  {seconds:7.2f} s  {rss:7.0f} MB",
                      flush=True)

    print()
    print(f"| case | {args.baseline} s (min–max, median) | current s (min–max, median) "
          f"| current / {args.baseline} (medians) | peak RSS MB, {args.baseline} / current |")
    print("|---|---|---|---:|---|")
    for case, size, _ in CASES:
        old, new = (timings[(case, size, name)] for name in (args.baseline, "current"))
        spread = lambda runs: (f"{min(s for s, _ in runs):.2f}–{max(s for s, _ in runs):.2f} "
                               f"({statistics.median(s for s, _ in runs):.2f})")
        ratio = statistics.median(s for s, _ in new) / statistics.median(s for s, _ in old)
        rss = f"{max(r for _, r in old):.0f} / {max(r for _, r in new):.0f}"
        print(f"| {case} {size:,} | {spread(old)} | {spread(new)} | {ratio:.2f}× | {rss} |")


if __name__ == "__main__":
    main()
