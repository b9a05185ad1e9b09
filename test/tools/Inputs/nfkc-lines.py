#!/usr/bin/env python3
"""nfkc-lines.py [--keep-blank] FILE: prints FILE as a sentencepiece model
with the default nmt_nfkc normalization gives it back after encoding and
decoding, computed independently with Python's unicodedata: each line in
NFKC, whitespace runs folded to one space, leading and trailing whitespace
dropped; lines left empty are dropped (as `ls2c tokenize` skips them) unless
--keep-blank (concatenated streams keep every line)."""
import re
import sys
import unicodedata

args = sys.argv[1:]
keep_blank = "--keep-blank" in args
args = [a for a in args if a != "--keep-blank"]
with open(args[0], encoding="utf-8", newline="\n") as f:
    text = f.read()
lines = text.split("\n")
if lines and lines[-1] == "":
    lines.pop()
out = []
for line in lines:
    norm = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", line)).strip(" ")
    if norm or keep_blank:
        out.append(norm + "\n")
sys.stdout.write("".join(out))
