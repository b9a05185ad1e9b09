"""Checks `ls2c generate --json` output: per input, ranks 1..n in order with
non-increasing scores; score = log_prob / length^penalty (length: generated
tokens, for translations the end token included, chosen or forced at the
limit); at most --max-new-tokens tokens; translations are never empty and
hold no special id (< 4), and "ended" (the end chosen before the limit)
only below the limit.

usage: check-generate.py OUTPUT.jsonl --inputs N --nbest K --max-new-tokens M
       [--penalty A] [--translation]
Prints one summary line; exits 1 with the first violated rule.
"""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("output")
    p.add_argument("--inputs", type=int, required=True)
    p.add_argument("--nbest", type=int, required=True)
    p.add_argument("--max-new-tokens", type=int, required=True)
    p.add_argument("--penalty", type=float, default=1.0)
    p.add_argument("--translation", action="store_true")
    a = p.parse_args()
    rows = [json.loads(line) for line in open(a.output, encoding="utf-8")]
    by_input = {}
    for r in rows:
        by_input.setdefault(r["input"], []).append(r)
    if sorted(by_input) != list(range(1, a.inputs + 1)):
        sys.exit(f"inputs {sorted(by_input)} are not 1..{a.inputs}")
    ended = 0
    for i, hyps in by_input.items():
        if [h["rank"] for h in hyps] != list(range(1, len(hyps) + 1)) or len(hyps) > a.nbest:
            sys.exit(f"input {i}: ranks {[h['rank'] for h in hyps]} (nbest {a.nbest})")
        for prev, cur in zip(hyps, hyps[1:]):
            if cur["score"] > prev["score"]:
                sys.exit(f"input {i}: rank {cur['rank']} scores above rank {prev['rank']}")
        for h in hyps:
            length = len(h["tokens"]) + (1 if a.translation else 0)
            if a.translation and (not h["tokens"] or (h["ended"] and length >= a.max_new_tokens)):
                sys.exit(f"input {i}: {h['tokens']} ended {h['ended']} at the limit {a.max_new_tokens}")
            if not a.translation and h["ended"]:
                sys.exit(f"input {i}: a decoder hypothesis ended (decoders have no end token)")
            if length > a.max_new_tokens or length == 0:
                sys.exit(f"input {i}: {length} generated tokens (limit {a.max_new_tokens})")
            want = h["log_prob"] / length ** a.penalty
            if abs(h["score"] - want) > 1e-9 * max(1.0, abs(want)):
                sys.exit(f"input {i}: score {h['score']} is not log_prob / length^A = {want}")
            if h["log_prob"] > 0:
                sys.exit(f"input {i}: log_prob {h['log_prob']} > 0")
            if a.translation and any(t < 4 for t in h["tokens"]):
                sys.exit(f"input {i}: a special id among {h['tokens']}")
            ended += h["ended"]
    print(f"{a.inputs} inputs, {len(rows)} hypotheses ranked and scored, {ended} ended")


if __name__ == "__main__":
    main()
