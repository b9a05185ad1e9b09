#!/usr/bin/env python3
"""patch-token-file.py IN OUT INDEX ID [--keep-checksum]: copies a token file
(include/ls2c/Data/TokenFile.h) with token INDEX set to ID, as another
writer might have produced it: the checksum (FNV-1a 64 of every byte but its
own eight at offset 64) is recomputed, unless --keep-checksum (a corrupted
file)."""
import struct
import sys

src, dst, index, new_id = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = bytearray(open(src, "rb").read())
assert data[:8] == b"LS2CTOK\0", "not a token file"
token_bytes, = struct.unpack_from("<I", data, 12)
num_sequences, = struct.unpack_from("<Q", data, 24)
at = 80 + 8 * (num_sequences + 1) + token_bytes * index
struct.pack_into("<H" if token_bytes == 2 else "<I", data, at, new_id)
if "--keep-checksum" not in sys.argv[5:]:
    h = 0xCBF29CE484222325
    for b in bytes(data[:64]) + bytes(data[72:]):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    struct.pack_into("<Q", data, 64, h)
open(dst, "wb").write(data)
