"""A Python reference implementation of saseval-gen's `assemble` work, the comparison target
the issue asks for: what a competent Python pipeline does for the same job, to run side by side
with saseval-gen (see benches/side_by_side.py).

It reads candidate items (JSONL), skips those flagged `_needs_review`, and in priority order
(category, round, id — as saseval-gen sorts them; the first occurrence wins):
  * drops exact duplicates: equal texts after normalisation (lower case, every character outside
    [a-z0-9] a space, runs of spaces collapsed, ends trimmed);
  * drops near duplicates: datasketch `MinHash(num_perm=112)` of the word 3-gram shingles of
    the normalised text, computed in a pool of worker processes, queried against a
    `MinHashLSH` of the survivors with 14 bands x 8 rows; every candidate it returns is
    verified with the exact Jaccard similarity of the shingle sets (>= the threshold), the
    survivor's set rebuilt from its normalised text (holding every survivor's set would take
    ~20 KB a candidate, 20 GB at a million);
  * trims each category to --per-category items: domains in a seeded order take turns, each
    domain's items in a seeded order, and the chosen items are put in a seeded order;
  * writes OUT_DIR/saseval_v2_prompts.jsonl and OUT_DIR/SHA256SUMS, and prints a summary line.

It is not byte-compatible with saseval-gen: its RNG, release records and near-duplicate
definition (word 3-grams here, character 5-grams with equal numbers there) differ.

Usage: python3 benches/reference/assemble.py INPUT.jsonl OUT_DIR [--per-category 100]
           [--seed 20260101] [--threshold 0.8] [--workers 2]
Measured with datasketch 2.0.0 (numpy 2.4.6, scipy 1.17.1) on Python 3.11.7; see
requirements.txt.
"""

import argparse
import hashlib
import json
import random
import re
import time
from collections import defaultdict
from itertools import islice, zip_longest
from multiprocessing import Pool
from pathlib import Path

from datasketch import LeanMinHash, MinHash, MinHashLSH

# saseval-gen's category order, the first key of the priority order.
CATEGORIES = [
    "simple_factual", "bloated_factual", "reasoning", "bloated_reasoning", "technical_code",
    "long_document_qa", "multi_document_qa", "conversational", "memory_recall", "memory_update",
]
NUM_PERM = 112
BANDS, ROWS = 14, 8
RELEASE = "saseval_v2_prompts.jsonl"
BASE = MinHash(num_perm=NUM_PERM)


def normalise(prompt):
    return re.sub(r"[^a-z0-9]+", " ", prompt.lower()).strip()


def shingle_set(text):
    words = text.split()
    return frozenset(" ".join(words[i : i + 3]) for i in range(len(words) - 2))


def sketch(prompt):
    """A prompt's normalised text, word 3-gram shingle set and MinHash values (in a worker)."""
    text = normalise(prompt)
    shingles = shingle_set(text)
    minhash = BASE.copy()
    minhash.update_batch([s.encode() for s in shingles])
    return text, shingles, minhash.hashvalues


def jaccard(a, b):
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def dedup(items, pool, threshold):
    """The items that survive, in priority order, and the numbers of exact and near duplicates."""
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM, params=(BANDS, ROWS))
    seen, kept, kept_texts = set(), [], []
    exact = near = 0
    sketches = pool.imap(sketch, (item["prompt"] for item in items), chunksize=256)
    for item, (text, shingles, hashvalues) in zip(items, sketches):
        if text in seen:
            exact += 1
            continue
        minhash = LeanMinHash(seed=BASE.seed, hashvalues=hashvalues, scheme=BASE.scheme)
        if shingles and any(
            jaccard(shingles, shingle_set(kept_texts[key])) >= threshold
            for key in lsh.query(minhash)
        ):
            near += 1
            continue
        seen.add(text)
        if shingles:
            lsh.insert(len(kept), minhash)
        kept.append(item)
        kept_texts.append(text)
    return kept, exact, near


def trim(items, category, want, seed):
    by_domain = defaultdict(list)
    for item in items:
        by_domain[item["domain"]].append(item)
    queues = []
    for domain in sorted(by_domain):
        queue = by_domain[domain]
        random.Random(f"{seed}/trim/{category}/{domain}").shuffle(queue)
        queues.append(queue)
    random.Random(f"{seed}/trim/{category}").shuffle(queues)
    rotation = (item for turn in zip_longest(*queues) for item in turn if item is not None)
    chosen = list(islice(rotation, want))
    random.Random(f"{seed}/order/{category}").shuffle(chosen)
    return chosen


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--per-category", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    started = time.monotonic()

    # The pool starts before the input is read, so its workers do not inherit the items.
    with Pool(args.workers) as pool:
        with args.input.open(encoding="utf-8") as lines:
            items = [json.loads(line) for line in lines if line.strip()]
        flagged = sum(1 for item in items if item.get("_needs_review"))
        items = [item for item in items if not item.get("_needs_review")]
        unknown = {item["category"] for item in items} - set(CATEGORIES)
        if unknown:
            parser.error(f"unknown categories in {args.input}: {sorted(unknown)}")
        items.sort(key=lambda item: (CATEGORIES.index(item["category"]), item["round"], item["id"]))
        kept, exact, near = dedup(items, pool, args.threshold)

    by_category = defaultdict(list)
    for item in kept:
        by_category[item["category"]].append(item)
    released = [
        item
        for category in CATEGORIES
        for item in trim(by_category[category], category, args.per_category, args.seed)
    ]
    data = "".join(
        json.dumps(
            {"id": f"sas-{n:04d}", "category": item["category"], "prompt": item["prompt"],
             "golds": item["golds"]},
            ensure_ascii=False,
        )
        + "\n"
        for n, item in enumerate(released, 1)
    ).encode()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / RELEASE).write_bytes(data)
    (args.out_dir / "SHA256SUMS").write_text(f"{hashlib.sha256(data).hexdigest()}  {RELEASE}\n")
    print(
        f"assemble.py: {len(released)} records written to {args.out_dir / RELEASE}; "
        f"dropped {exact} exact and {near} near duplicates, skipped {flagged} flagged; "
        f"{time.monotonic() - started:.2f} s"
    )


if __name__ == "__main__":
    main()
