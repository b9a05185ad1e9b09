#!/usr/bin/env python3
"""Follows, for every index, the branches of each concat in the gradient
accumulation kernels of `ls2c compile --emit=cuda` output, and checks that
the index reaches the load of the input that holds it, at its offset in that
input: inputs in order, each a contiguous range, read from its first index as
0, every index of [0, N) reaching exactly one load, no branch deeper than
ceil(log2(branches)), and at most MAX_BRANCHES branches. Prints one line
per selection (one per path of each distinct loop kernel) or FAIL lines.

Usage: check-concat-search.py KERNELS.cu MAX_BRANCHES
"""
import math
import re
import sys

IF = re.compile(r'^if \(i < (\d+)\) \{$')
LOAD = re.compile(r'= ls2_load\(in(\d+), (.*)\);$')


def parse(lines, pos):
    """The selection tree from lines[pos]: ('if', bound, then, else) or
    ('leaf', [(input, index expression as Python)]). Returns (tree, next
    position)."""
    m = IF.match(lines[pos])
    if not m:
        loads = []
        while pos < len(lines) and not lines[pos].startswith('}'):
            for k, expr in LOAD.findall(lines[pos]):
                # C's / on the non-negative indices here is Python's //.
                loads.append((int(k), compile(expr.replace('/', '//'), expr, 'eval')))
            pos += 1
        if not loads:
            raise ValueError('a branch that loads no input')
        return ('leaf', loads), pos
    then, pos = parse(lines, pos + 1)
    if lines[pos] != '} else {':
        raise ValueError(f'expected "}} else {{", found "{lines[pos]}"')
    other, pos = parse(lines, pos + 1)
    if lines[pos] != '}':
        raise ValueError(f'expected "}}", found "{lines[pos]}"')
    return ('if', int(m.group(1)), then, other), pos + 1


def depth(tree):
    return 0 if tree[0] == 'leaf' else 1 + max(depth(tree[2]), depth(tree[3]))


def check(name, n, tree, max_branches):
    first = {}  # leaf -> first index reaching it
    last_leaf = None
    for i in range(n):
        node = tree
        while node[0] == 'if':
            node = node[2] if i < node[1] else node[3]
        leaf = id(node)
        if leaf != last_leaf:
            if leaf in first:
                return f'FAIL {name}: index {i} reaches a branch again, out of order'
            first[leaf] = i
            last_leaf = leaf
        for k, expr in node[1]:
            at = eval(expr, {}, {'i': i})
            if at != i - first[leaf]:
                return (f'FAIL {name}: index {i} reads input {k} at {at}, not '
                        f'{i - first[leaf]} (its branch starts at {first[leaf]})')
    branches = len(first)
    if branches > max_branches:
        return f'FAIL {name}: {branches} branches, more than {max_branches}'
    d = depth(tree)
    if d > math.ceil(math.log2(branches)):
        return f'FAIL {name}: depth {d} for {branches} branches'
    return f'{name}: {branches} branches over [0, {n}), depth {d}'


def main():
    text = open(sys.argv[1]).read()
    max_branches = int(sys.argv[2])
    results = []
    for kernel in re.split(r'(?=// ===== kernel )', text)[1:]:
        name = kernel.split()[3].rstrip(':')
        if not name.startswith('accumulate_gradients'):
            continue
        n = re.search(r'const long long N = (\d+);', kernel)
        lines = [l.strip() for l in kernel.splitlines()]
        for pos, line in enumerate(lines):
            if IF.match(line) and re.match(r'^float v\d+;$', lines[pos - 1]):
                try:
                    tree, _ = parse(lines, pos)
                    results.append(check(name, int(n.group(1)), tree, max_branches))
                except (ValueError, IndexError, AttributeError) as e:
                    results.append(f'FAIL {name}: {e}')
    if not results:
        results.append('FAIL: no concat in an accumulation kernel')
    for r in results:
        print(r)


if __name__ == '__main__':
    main()
