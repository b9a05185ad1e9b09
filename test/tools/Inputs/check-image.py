#!/usr/bin/env python3
"""check-image.py FILE: FILE is a valid, non-empty PNG (decoded by matplotlib, not one flat
colour) or SVG (well-formed XML whose root is <svg> with drawn paths)."""
import sys
import xml.etree.ElementTree as ET

path = sys.argv[1]
data = open(path, "rb").read()
if not data:
    sys.exit(f"FAIL: {path} is empty")
if path.endswith(".png"):
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        sys.exit(f"FAIL: {path} has no PNG signature")
    import matplotlib.image as mpimg
    img = mpimg.imread(path)
    h, w = img.shape[:2]
    if h < 100 or w < 100 or img.min() == img.max():
        sys.exit(f"FAIL: {path}: {w}x{h}, min {img.min()} max {img.max()}")
    print(f"PNG {w}x{h}, {len(data)} bytes")
else:
    root = ET.fromstring(data)
    paths = sum(1 for e in root.iter() if e.tag.endswith("path"))
    if not root.tag.endswith("svg") or paths == 0:
        sys.exit(f"FAIL: {path}: root {root.tag}, {paths} paths")
    print(f"SVG with {paths} paths, {len(data)} bytes")
