"""Writes a candidate file N times as large as a given one with the same density of duplicates,
so assemble's growth can be measured apart from the growth of its input's duplicates.

The synthetic candidates of `cargo bench --bench scale` are drawn from a fixed stock of names,
teams and questions, so a larger file is denser in near duplicates: 2,855 duplicates at 100k,
127,732 at 1M (45x for 10x the candidates). Dedup's work is per pair, so its wall time grows
with that density as well as with the count. This script makes the other kind of input:

  * copy 0 is the source file unchanged;
  * copy k > 0 puts its prompts' letters under a seeded substitution cipher of its own (one
    permutation of a-z, applied to both cases). A cipher is a bijection on letters, so within a
    copy every exact and near duplicate of the source stays one, with the same similarity;
    across copies, texts share next to no 5-gram;
  * ids get `.c<k>` after their round, so they stay unique.

Usage:
    python3 benches/constant_density.py SOURCE.jsonl OUT_DIR [--copies N]

    # 1M candidates with the 100k file's density, then assemble on them:
    python3 benches/constant_density.py target/bench/work/candidates-100000/candidates.jsonl \
        target/bench/work/constant-density-1000000
    target/release/deps/scale-* --case assemble 1000000 target/bench/work/constant-density-1000000

OUT_DIR/candidates.jsonl is the output. Python standard library only.
"""

import argparse
import json
import random
import string
from pathlib import Path

SEED = 20261202


def cipher(copy, rng):
    """The letter table of one copy: the identity for copy 0, a fresh permutation otherwise."""
    letters = list(string.ascii_lowercase)
    if copy:
        rng.shuffle(letters)
    shuffled = "".join(letters)
    return str.maketrans(
        string.ascii_lowercase + string.ascii_uppercase, shuffled + shuffled.upper()
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--copies", type=int, default=10)
    args = parser.parse_args()
    if args.copies < 1:
        parser.error("--copies must be at least 1")
    lines = args.source.read_text(encoding="utf-8").splitlines()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    written = 0
    with open(args.out_dir / "candidates.jsonl", "w", encoding="utf-8") as out:
        for copy in range(args.copies):
            table = cipher(copy, rng)
            for line in lines:
                candidate = json.loads(line)
                candidate["prompt"] = candidate["prompt"].translate(table)
                round_tag = f".r{candidate['round']}."
                candidate["id"] = candidate["id"].replace(round_tag, f"{round_tag}c{copy}.", 1)
                out.write(json.dumps(candidate, ensure_ascii=False, separators=(",", ":")))
                out.write("\n")
                written += 1
    print(f"constant_density: wrote {written} candidates to {args.out_dir / 'candidates.jsonl'}")


if __name__ == "__main__":
    main()
