#!/usr/bin/env python3
"""edit-batch.py IN OUT TENSOR set INDEX VALUE | drop-last: writes the safetensors file
IN to OUT with one integer (I32/I64) tensor changed: element INDEX set to VALUE, or its
last element dropped. Standard library only."""
import json
import struct
import sys

src, dst, name, action = sys.argv[1:5]
data = open(src, "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
meta = header.pop("__metadata__", None)
body = data[8 + n:]
fmt = {"I32": "i", "I64": "q"}
tensors = {}
for key, t in header.items():
    begin, end = t["data_offsets"]
    tensors[key] = (t["dtype"], t["shape"], bytearray(body[begin:end]))
dtype, shape, raw = tensors[name]
size = struct.calcsize(fmt[dtype])
if action == "set":
    index, value = int(sys.argv[5]), int(sys.argv[6])
    raw[index * size:(index + 1) * size] = struct.pack("<" + fmt[dtype], value)
elif action == "drop-last":
    shape = [shape[0] - 1] + shape[1:]
    raw = raw[:-size]
else:
    sys.exit(f"unknown action {action}")
tensors[name] = (dtype, shape, raw)
out_header, out_body = {}, b""
for key in sorted(tensors):
    dtype, shape, raw = tensors[key]
    out_header[key] = {"dtype": dtype, "shape": shape,
                       "data_offsets": [len(out_body), len(out_body) + len(raw)]}
    out_body += bytes(raw)
if meta is not None:
    out_header["__metadata__"] = meta
text = json.dumps(out_header).encode()
text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + out_body)
