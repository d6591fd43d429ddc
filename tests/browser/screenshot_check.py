#!/usr/bin/env python3
"""Counts the pixels of each timeline colour in a PNG screenshot (stdlib only: zlib PNG decoding)
and compares them with the cells the page draws: the HTML timeline rendered by a real browser
must show its full cells in dark blue and its holes in light grey, each cell its declared size.

Usage: screenshot_check.py SHOT.png FULL_CELLS IDLE_CELLS CELL_W CELL_H
       screenshot_check.py SHOT.png --colour RRGGBB MIN_PX MAX_PX   (a picture's own colour: its pixel count in range)"""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), f"unsupported PNG (depth {depth}, colour type {ctype})"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 4 if ctype == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def colour_counts(shot):
    width, height, bpp, rows = read_png(shot)
    counts = {}
    for line in rows:
        for x in range(width):
            rgb = bytes(line[x * bpp:x * bpp + 3])
            counts[rgb] = counts.get(rgb, 0) + 1
    return width, height, counts


def main():
    if len(sys.argv) == 6 and sys.argv[2] == "--colour":
        shot, colour, lo, hi = sys.argv[1], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        width, height, counts = colour_counts(shot)
        n = counts.get(bytes.fromhex(colour), 0)
        print(f"{width}x{height}: #{colour} {n} px (expected {lo} .. {hi})")
        sys.exit(0 if lo <= n <= hi else 1)
    shot, full, idle, cw, ch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    width, height, counts = colour_counts(shot)
    dark = counts.get(bytes.fromhex("08306b"), 0)
    grey = counts.get(bytes.fromhex("eeeeee"), 0)
    want_dark, want_grey = full * cw * ch, idle * cw * ch
    print(f"{width}x{height}: #08306b {dark} px (cells {want_dark}), #eeeeee {grey} px (cells {want_grey})")
    ok = want_dark <= dark <= want_dark * 1.25 + 400 and want_grey <= grey <= want_grey * 1.25 + 400
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
