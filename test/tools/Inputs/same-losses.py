#!/usr/bin/env python3
"""same-losses.py FULL.jsonl RESUMED.jsonl: the per-step training losses of
an uninterrupted run and of a run stopped and resumed are identical, and so
are the validation losses of every step both evaluated (the stopped run also
evaluates where it stopped)."""
import json
import sys


def losses(path):
    train, valid = {}, {}
    for line in open(path):
        record = json.loads(line)
        if 'loss' in record:
            train[record['step']] = record['loss']
        if 'valid_loss' in record:
            valid[record['step']] = record['valid_loss']
    return train, valid


(train_a, valid_a), (train_b, valid_b) = losses(sys.argv[1]), losses(sys.argv[2])
if train_a != train_b:
    sys.exit('training losses differ:\n%r\n%r' % (train_a, train_b))
common = sorted(set(valid_a) & set(valid_b))
if not common or any(valid_a[s] != valid_b[s] for s in common):
    sys.exit('validation losses differ:\n%r\n%r' % (valid_a, valid_b))
print('%d training and %d validation losses identical' % (len(train_a), len(common)))
