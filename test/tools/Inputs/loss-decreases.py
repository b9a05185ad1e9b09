#!/usr/bin/env python3
"""loss-decreases.py METRICS.jsonl [--accuracy]: the training loss falls (the
mean of the last third of the steps is below the mean of the first third) and
so does the validation loss (last evaluation below the first; at least two).
With --accuracy every validation line must carry valid_accuracy in [0, 1].
Prints the curves' ends for the test log and FileCheck."""
import json
import sys

path, want_accuracy = sys.argv[1], '--accuracy' in sys.argv[2:]
train, valid = [], []
for line in open(path):
    record = json.loads(line)
    if 'loss' in record:
        train.append(record['loss'])
    if 'valid_loss' in record:
        valid.append(record)
third = max(len(train) // 3, 1)
first, last = sum(train[:third]) / third, sum(train[-third:]) / third
if len(train) < 3 or not last < first:
    sys.exit('training loss does not fall: %r' % train)
if len(valid) < 2 or not valid[-1]['valid_loss'] < valid[0]['valid_loss']:
    sys.exit('validation loss does not fall: %r' % valid)
line = 'training loss %.3f -> %.3f over %d steps, validation loss %.3f -> %.3f' % (
    first, last, len(train), valid[0]['valid_loss'], valid[-1]['valid_loss'])
if want_accuracy:
    accuracy = [r.get('valid_accuracy') for r in valid]
    if any(a is None or not 0 <= a <= 1 for a in accuracy):
        sys.exit('validation lines without an accuracy in [0, 1]: %r' % valid)
    line += ', accuracy %.3f -> %.3f' % (accuracy[0], accuracy[-1])
print(line)
