"""Checks that every loop kernel of a generated .cu file reads all its
operands before its first store, on the vector path (within an element's
body) and on the scalar path: an output written over an argument that
another output of the same element reads (InPlaceResults.h) must not feed
it. Prints one line per loop kernel with several outputs, FAIL on a load
after a store."""
import re
import sys

source = open(sys.argv[1]).read()
parts = re.split(r"^// ===== kernel (\S+):.*$", source, flags=re.M)
for name, body in zip(parts[1::2], parts[2::2]):
    if "_loop_" not in name:
        continue
    outputs = len(set(re.findall(r"\bout(\d+)\b", body)))
    if outputs < 2:
        continue
    scalar = body.split("for (long long i = base; i < N", 1)
    if len(scalar) != 2:
        continue
    lines = scalar[1].splitlines()
    first_store = next((k for k, l in enumerate(lines) if "ls2_store(out" in l), None)
    late = [l.strip() for l in lines[first_store or 0:] if first_store is not None and "ls2_load(" in l]
    print(("FAIL " if late else "") + f"{name}: {outputs} outputs, scalar path stores after its loads"
          + (f": {late[0]}" if late else ""))
