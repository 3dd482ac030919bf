"""8- and 16-bit PNG files written with zlib alone, for the test scripts that need
image folders (tests/cli, tests/dist): standard library only."""
import struct
import zlib


def _chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def write_png(file, width, height, samples, channels=1, bit_depth=8):
    """samples: width * height * channels values (below 2 ** bit_depth), rows top to bottom; 1 channel is
    grey, 3 RGB."""
    color_type = {1: 0, 3: 2}[channels]
    stride = width * channels
    pack = bytes if bit_depth == 8 else (lambda values: b"".join(struct.pack(">H", v) for v in values))
    rows = b"".join(b"\0" + pack(samples[y * stride:(y + 1) * stride]) for y in range(height))
    with open(file, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0,
                                                                      0, 0))
                + _chunk(b"IDAT", zlib.compress(rows)) + _chunk(b"IEND", b""))


def write_rgb_png(file, width, height, rgb):
    write_png(file, width, height, rgb, channels=3)
