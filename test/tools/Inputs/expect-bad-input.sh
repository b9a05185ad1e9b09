#!/usr/bin/env bash
# expect-bad-input.sh COMMAND...: runs an ls2c command that must refuse its
# input: exit status exactly 2, nothing on stdout, exactly one line on stderr,
# which is printed for FileCheck.
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err"
rc=$?
if [ "$rc" -ne 2 ]; then echo "FAIL: exit status $rc, expected 2"; cat "$err"; exit 1; fi
if [ -s "$out" ]; then echo "FAIL: stdout is not empty:"; cat "$out"; exit 1; fi
lines=$(wc -l <"$err")
if [ "$lines" -ne 1 ]; then echo "FAIL: $lines lines on stderr, expected 1:"; cat "$err"; exit 1; fi
cat "$err"
