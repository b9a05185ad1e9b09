"""`ls2c bleu --json` against sacreBLEU's corpus_bleu on Multi30k's English.

Hypotheses are deterministic perturbations of the references (words dropped,
neighbours swapped, words replaced), so scores land mid-range rather than at
0 or 100. Per case it prints one line for FileCheck and fails (exit 1) unless
the scores agree within 0.1, the n-gram statistics and lengths are equal, and
`ls2c bleu`'s score line is sacreBLEU's.

usage: bleu-vs-sacrebleu.py --ls2c LS2C --data MULTI30K_DIR --workdir DIR
"""
import argparse
import gzip
import json
import os
import random
import subprocess
import sys

import sacrebleu

FILLERS = ["a", "the", "man", "is", "in", "of", "dog", ",", "."]


def read_lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def perturb(line, seed, drop, swap, replace):
    """A copy of `line` with each word dropped, swapped with the next or
    replaced by a filler at the given rates, in a seeded random order."""
    rng = random.Random(f"{seed}:{line}")
    words = line.split(" ")
    out = []
    for w in words:
        r = rng.random()
        if r < drop:
            continue
        if r < drop + replace:
            w = FILLERS[rng.randrange(len(FILLERS))]
        out.append(w)
    for i in range(len(out) - 1):
        if rng.random() < swap:
            out[i], out[i + 1] = out[i + 1], out[i]
    return " ".join(out)


def roughen(line, seed):
    """`line` with what 13a must normalize or keep whole: entities, no-break
    spaces, punctuation attached or set apart, numbers with "." and ","."""
    rng = random.Random(f"rough{seed}:{line}")
    words = line.split(" ")
    for i, w in enumerate(words):
        r = rng.random()
        if r < 0.05:
            words[i] = f"&quot;{w}&quot;"
        elif r < 0.1:
            words[i] = w + rng.choice([",", ".", ";", "!", " ,", "&amp;", "-"])
        elif r < 0.13:
            words[i] = rng.choice(["3.5", "1,000", "5-year-old", "(2)", "U.S.", "$4.50,"])
    sep = "\u00a0" if rng.random() < 0.1 else " "
    return sep.join(words)


def write(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def compare(name, ls2c, workdir, hyps, refs, expect_range=None, expect_zero_4gram=False):
    hyp_path = os.path.join(workdir, f"{name}.hyp")
    write(hyp_path, hyps)
    ref_paths = []
    for k, ref in enumerate(refs):
        ref_paths.append(os.path.join(workdir, f"{name}.ref{k}"))
        write(ref_paths[-1], ref)

    ours = json.loads(subprocess.run([ls2c, "bleu", hyp_path, *ref_paths, "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    line = subprocess.run([ls2c, "bleu", hyp_path, *ref_paths], check=True,
                          capture_output=True, text=True).stdout.rstrip("\n")
    theirs = sacrebleu.corpus_bleu(hyps, refs)

    problems = []
    if abs(ours["score"] - theirs.score) > 0.1:
        problems.append(f"scores differ by more than 0.1")
    for key, value in [("counts", list(theirs.counts)), ("totals", list(theirs.totals)),
                       ("hyp_len", theirs.sys_len), ("ref_len", theirs.ref_len)]:
        if ours[key] != value:
            problems.append(f"{key}: ls2c {ours[key]}, sacreBLEU {value}")
    if line != str(theirs):
        problems.append(f"score line: ls2c '{line}', sacreBLEU '{theirs}'")
    if expect_range and not expect_range[0] <= theirs.score <= expect_range[1]:
        problems.append(f"sacreBLEU's score {theirs.score:.2f} is outside {expect_range}: "
                        "the perturbation no longer makes a mid-range case")
    if expect_zero_4gram and theirs.counts[3] != 0:
        problems.append("some 4-gram matched: the case no longer exercises smoothing")

    print(f"{name}: {len(hyps)} lines, {len(refs)} reference(s): sacreBLEU {theirs.score:.6f}, "
          f"ls2c {ours['score']:.6f}, difference {abs(ours['score'] - theirs.score):.2e}: "
          + ("OK " + line if not problems else "FAILED: " + "; ".join(problems)))
    return not problems


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ls2c", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--workdir", required=True)
    a = p.parse_args()

    test = read_lines(os.path.join(a.data, "test_2016_flickr.en.gz"))
    val = read_lines(os.path.join(a.data, "val.en.gz"))
    ok = True
    # One reference, a mild perturbation.
    ok &= compare("test2016-1ref", a.ls2c, a.workdir,
                  [perturb(s, 1, 0.1, 0.15, 0.1) for s in test], [test], (20, 60))
    # Two references: the original and another perturbation of it, some of
    # its lines empty (a reference of no tokens).
    second = ["" if i % 10 == 3 else perturb(s, 2, 0.1, 0.1, 0.15) for i, s in enumerate(test)]
    ok &= compare("test2016-2refs", a.ls2c, a.workdir,
                  [perturb(s, 1, 0.1, 0.15, 0.1) for s in test], [test, second], (20, 60))
    # A heavier perturbation of the validation set: a low score.
    ok &= compare("val-heavy", a.ls2c, a.workdir,
                  [perturb(s, 3, 0.3, 0.4, 0.2) for s in val], [val], (3, 30))
    # Entities, attached punctuation, numbers and no-break spaces, roughened
    # differently on both sides, so the score depends on 13a's rules.
    ok &= compare("val-13a", a.ls2c, a.workdir,
                  [roughen(perturb(s, 4, 0.1, 0.1, 0.1), 5) for s in val],
                  [[roughen(s, 6) for s in val]], (20, 60))
    # Three lines with every word swapped away from its neighbours: no 4-gram
    # matches, so the score rests on "exp" smoothing.
    few = val[:3]
    ok &= compare("val-smoothed", a.ls2c, a.workdir,
                  [" ".join(s.split(" ")[::-1]) for s in few], [few],
                  (0.1, 100), expect_zero_4gram=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
