#!/usr/bin/env python3
"""The HTML report in a real browser: headless Chromium renders `capcalc report` to a PNG.

Fails on a console message (the page has no scripts, so any message is an error: a blocked
fetch, a parse error), a blank page (every pixel one colour), or a missing roofline (no pixels
of the roof's colour, #c0392b, where the figure is). Exits 77, which CTest reads as skipped,
when no Chromium is installed. The PNG is decoded with zlib and struct only (no PIL).

  browser_render.py CHROMIUM CAPCALC OUT_DIR
"""
import os
import shutil
import struct
import subprocess
import sys
import zlib

SKIP = 77
ROOF = (0xC0, 0x39, 0x2B)  # src/report_roofline_svg.cpp kRoofColour
WIDTH, HEIGHT = 1200, 2000


def decode_png(data):
    """Returns (width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace != 0:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}")
    channels = 3 if colour == 2 else 4
    stride = width * channels
    raw = zlib.decompress(idat)
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        previous = line
    return width, height, rows


def encode_png(width, height, pixel):
    """An 8-bit RGB PNG of pixel(x, y) -> (r, g, b), for the checks' own test."""
    raw = b"".join(b"\x00" + bytes(c for x in range(width) for c in pixel(x, y))
                   for y in range(height))
    chunk = lambda kind, body: (struct.pack(">I", len(body)) + kind + body +
                                struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def problems(png):
    """What is wrong with a rendered report: [] when it has content and a roofline."""
    width, height, rows = decode_png(png)
    colours = set()
    roof = 0
    for row in rows:
        colours.update(row)
        roof += sum(1 for p in row if all(abs(a - b) <= 6 for a, b in zip(p, ROOF)))
    found = []
    if len(colours) <= 1:
        found.append("blank page: every pixel is one colour")
    elif len(colours) < 16:
        found.append(f"nearly blank page: {len(colours)} colours")
    if roof < 200:  # The roof is a 2.5 px line hundreds of pixels long.
        found.append(f"no roofline: {roof} pixels of the roof's colour")
    return found


def self_test():
    """The checks fail where they should, on images made here."""
    blank = encode_png(40, 30, lambda x, y: (255, 255, 255))
    assert problems(blank)[0].startswith("blank page"), problems(blank)
    noisy = encode_png(64, 64, lambda x, y: ((x * 4) % 256, (y * 4) % 256, 128))
    found = problems(noisy)
    assert len(found) == 1 and found[0].startswith("no roofline"), found
    roof = encode_png(64, 64, lambda x, y: ROOF if y < 8 else ((x * 4) % 256, (y * 4) % 256, 9))
    assert problems(roof) == [], problems(roof)


def render(chromium, html, png, profile):
    command = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
               "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
               "--enable-logging=stderr", "--v=0", f"--window-size={WIDTH},{HEIGHT}",
               f"--screenshot={png}", "file://" + os.path.abspath(html)]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=240)
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    if done.returncode != 0 or not os.path.exists(png):
        sys.exit(f"chromium failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return console


def main():
    chromium, capcalc, out = sys.argv[1:4]
    self_test()
    if not chromium or chromium.endswith("NOTFOUND") or not shutil.which(chromium):
        print("SKIPPED: chromium not found (apt install chromium)")
        return SKIP
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    failed = []
    pages = {
        "resnet50": ["resnet50", "--gpu", "A100"],
        "gpt2_serving": ["gpt2", "--gpu", "h100", "--precision", "bf16", "--prompt-tokens", "512",
                         "--output-tokens", "128"],
    }
    for name, args in pages.items():
        html = os.path.join(out, name + ".html")
        png = os.path.join(out, name + ".png")
        subprocess.run([capcalc, "report", *args, "-o", html], check=True)
        console = render(chromium, html, png, os.path.join(out, name + ".profile"))
        with open(png, "rb") as f:
            found = problems(f.read())
        found += [f"console message: {line}" for line in console]
        for problem in found:
            failed.append(f"{name}: {problem}")
        print(f"{name}: rendered {png} ({os.path.getsize(png)} bytes): "
              f"{'ok' if not found else 'FAILED'}")
    for problem in failed:
        print(problem, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
