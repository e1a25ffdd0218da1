#!/usr/bin/env python3
"""Can a bundled model tell a publishable record from junk? Asks MODEL for PASS or FAIL on every
labelled record of the main job (benches/labelled/main_job_records.jsonl, each judged by reading
it) and prints the probability of PASS beside the label, and the AUC: 1.0 separates them all,
0.5 is chance. Needs llama-cpp-python (scripts/setup.sh installs it for the tests).

    python3 benches/judge_separation.py models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
"""
import json
import math
import pathlib
import sys

from llama_cpp import Llama

SYSTEM = (
    "You review items for a benchmark. An item is a prompt (which may include documents, a "
    "dialog or stored facts) and its answer key. Reply PASS only if the prompt asks exactly one "
    "clear question, the context or well-known fact determines a single answer, and the answer "
    "key is that answer. Otherwise reply FAIL. Reply with one word."
)


def pass_probability(llm, record):
    user = (
        f"PROMPT:\n{record['prompt']}\n\nANSWER KEY: {record['golds'][0]}\n\n"
        "Is the answer key the single correct answer to the prompt's question? Reply PASS or FAIL."
    )
    reply = llm.create_chat_completion(
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        max_tokens=1,
        temperature=0,
        logprobs=True,
        top_logprobs=10,
    )
    top = reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    chance = {t["token"].strip().upper(): math.exp(t["logprob"]) for t in top}
    passed, failed = chance.get("PASS", 0.0), chance.get("FAIL", 0.0)
    return passed / (passed + failed) if passed + failed > 0 else 0.5


def main():
    model = sys.argv[1]
    labelled = pathlib.Path(__file__).parent / "labelled" / "main_job_records.jsonl"
    records = [json.loads(line) for line in labelled.read_text().splitlines()]
    llm = Llama(model_path=model, n_ctx=4096, n_threads=2, seed=1, logits_all=True, verbose=False)
    scored = sorted(
        ((pass_probability(llm, r), r["publishable"], r) for r in records),
        key=lambda s: s[0],
        reverse=True,
    )
    for score, publishable, record in scored:
        question = record["prompt"].rsplit("\n", 1)[-1][-90:]
        print(f"{score:.3f}  {'publishable' if publishable else 'junk       '}  {question}")
    good = [s for s, p, _ in scored if p]
    junk = [s for s, p, _ in scored if not p]
    pairs = sum((g > j) + 0.5 * (g == j) for g in good for j in junk)
    print(f"AUC {pairs / (len(good) * len(junk)):.2f} over {len(good)} publishable and {len(junk)} junk records")


if __name__ == "__main__":
    main()
