#!/usr/bin/env python3
"""checkpoint-step.py FILE: checks that FILE is a whole safetensors file (header within the
file, every tensor's data range inside it, the data ending exactly at the end of the file)
and prints its training step and tensor count. Standard library only."""
import json
import struct
import sys

data = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", data[:8])
if 8 + n > len(data):
    sys.exit(f"FAIL: header of {n} bytes in a file of {len(data)}")
header = json.loads(data[8:8 + n])
meta = header.pop("__metadata__", {})
end = max((t["data_offsets"][1] for t in header.values()), default=0)
if 8 + n + end != len(data):
    sys.exit(f"FAIL: data ends at {8 + n + end}, the file at {len(data)}")
print(f"step {meta.get('ls2c.step')}, {len(header)} tensors, whole")
