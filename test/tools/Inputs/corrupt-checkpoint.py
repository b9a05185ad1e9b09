#!/usr/bin/env python3
"""corrupt-checkpoint.py IN OUT MODE: writes IN (an ls2c checkpoint) to OUT with one
fault. MODE: negative-second-moment (element 3 of ls2c.optimizer.exp_avg_sq set to
-1.0) or extra-tensor (an F32 [2] tensor 'foo' added). Standard library only."""
import json
import struct
import sys

src, dst, mode = sys.argv[1:4]
data = open(src, "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
body = bytearray(data[8 + n:])
if mode == "negative-second-moment":
    begin = header["ls2c.optimizer.exp_avg_sq"]["data_offsets"][0]
    body[begin + 12:begin + 16] = struct.pack("<f", -1.0)
elif mode == "extra-tensor":
    header["foo"] = {"dtype": "F32", "shape": [2], "data_offsets": [len(body), len(body) + 8]}
    body += struct.pack("<2f", 1.0, 2.0)
else:
    sys.exit(f"unknown mode {mode}")
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + bytes(body))
