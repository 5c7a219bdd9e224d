"""Image files for the tests, made with the standard library: a real PNG (decodable, of any
size: `filler` adds incompressible pixels), and the headers of JPEG, GIF and WebP files,
each as the format lays it out, so the worker's magic-number sniffing meets what encoders
write."""

import os
import struct
import zlib


def _chunk(kind, data):
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))


def png(width, height, noise=False):
    """A valid RGB PNG, gray or (noise=True) random pixels, which no compressor shrinks."""
    row = width * 3
    if noise:
        pixels = b''.join(b'\x00' + os.urandom(row) for _ in range(height))
    else:
        pixels = (b'\x00' + b'\x80' * row) * height
    header = struct.pack('>IIBBBBB', width, height, 8, 2, 0, 0, 0)
    return (b'\x89PNG\r\n\x1a\n' + _chunk(b'IHDR', header)
            + _chunk(b'IDAT', zlib.compress(pixels, 1)) + _chunk(b'IEND', b''))


def jpeg(width, height):
    """SOI, an APP0 (JFIF) segment, a DQT segment, then the baseline frame header."""
    app0 = b'\xff\xe0' + struct.pack('>H', 16) + b'JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00'
    dqt = b'\xff\xdb' + struct.pack('>H', 67) + b'\x00' + bytes(range(64))
    sof = b'\xff\xc0' + struct.pack('>HBHHB', 17, 8, height, width, 3) + b'\x01\x22\x00\x02\x11\x01\x03\x11\x01'
    return b'\xff\xd8' + app0 + dqt + sof + b'\xff\xd9'


def gif(width, height):
    return b'GIF89a' + struct.pack('<HH', width, height) + b'\x00\x00\x00;'


def webp_lossless(width, height):
    bits = (width - 1) | (height - 1) << 14
    body = b'\x2f' + struct.pack('<I', bits) + b'\x00' * 8
    return b'RIFF' + struct.pack('<I', 4 + 8 + len(body)) + b'WEBP' + b'VP8L' + struct.pack('<I', len(body)) + body


def webp_lossy(width, height):
    body = b'\x00\x00\x00' + b'\x9d\x01\x2a' + struct.pack('<HH', width, height) + b'\x00' * 8
    return b'RIFF' + struct.pack('<I', 4 + 8 + len(body)) + b'WEBP' + b'VP8 ' + struct.pack('<I', len(body)) + body


def webp_extended(width, height):
    body = b'\x00\x00\x00\x00' + (width - 1).to_bytes(3, 'little') + (height - 1).to_bytes(3, 'little')
    return b'RIFF' + struct.pack('<I', 4 + 8 + len(body)) + b'WEBP' + b'VP8X' + struct.pack('<I', len(body)) + body

