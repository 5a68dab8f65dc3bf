#!/usr/bin/env python3
"""Prints the computed records of Sources/CGateProtocol/vectors/v2-vectors.txt (sha256,
hmac, material, key-text, frame) with Python's hashlib and hmac: a second implementation,
independent of the C core, so the file checks the core rather than repeating it.

Usage: python3 firmware/test/compute-vectors.py > /tmp/computed.txt, then compare with
(or paste over) the records of the same kinds in the vectors file.
"""
import hashlib
import hmac
import struct

MATERIALS = {"A": bytes(range(0x00, 0x20)), "B": bytes(range(0xA0, 0xC0))}


def h(data: bytes) -> str:
    return data.hex() if data else "-"


def sha256_records():
    print("\n# SHA-256: FIPS 180-4 examples, padding boundaries, a million 'a'")
    messages = [b"", b"abc", b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"]
    messages += [bytes((i * 7) & 0xFF for i in range(n)) for n in (55, 56, 63, 64, 65, 119, 128)]
    for m in messages:
        print(f"sha256 {h(m)} {hashlib.sha256(m).hexdigest()}")
    print(f"sha256-repeat 61 1000000 {hashlib.sha256(b'a' * 1000000).hexdigest()}")


def hmac_records():
    """RFC 4231 section 4, test cases 1 to 7 (case 5 truncated to 128 bits)."""
    print("\n# HMAC-SHA256: RFC 4231 test cases 1 to 7")
    cases = [
        (b"\x0b" * 20, b"Hi There", 32),
        (b"Jefe", b"what do ya want for nothing?", 32),
        (b"\xaa" * 20, b"\xdd" * 50, 32),
        (bytes(range(1, 26)), b"\xcd" * 50, 32),
        (b"\x0c" * 20, b"Test With Truncation", 16),
        (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First", 32),
        (b"\xaa" * 131, b"This is a test using a larger than block-size key and a larger than "
         b"block-size data. The key needs to be hashed before being used by the HMAC algorithm.", 32),
    ]
    for key, message, size in cases:
        mac = hmac.new(key, message, hashlib.sha256).digest()[:size]
        print(f"hmac {h(key)} {h(message)} {mac.hex()}")
    print("# Keys around the 64-byte block: shorter, equal (used as is), longer (hashed first)")
    for n in (63, 64, 65):
        key, message = bytes((i * 13 + 5) & 0xFF for i in range(n)), b"gate"
        print(f"hmac {h(key)} {h(message)} {hmac.new(key, message, hashlib.sha256).hexdigest()}")


def direction_keys(k: bytes):
    return (hmac.new(k, b"gate v2 c2d", hashlib.sha256).digest(),
            hmac.new(k, b"gate v2 d2c", hashlib.sha256).digest())


def material_records():
    print("\n# Keys: K, K_c2d = HMAC-SHA256(K, \"gate v2 c2d\"), K_d2c = HMAC-SHA256(K, \"gate v2 d2c\")")
    for name, k in MATERIALS.items():
        c2d, d2c = direction_keys(k)
        print(f"material {name} {k.hex()} {c2d.hex()} {d2c.hex()}")


def key_text_records():
    print("\n# Key text: 64 hex digits, either case, at most one trailing newline (\\n or \\r\\n)")
    a = MATERIALS["A"].hex()
    for text, ok in [(a, True), (a.upper(), True), (a + "\n", True), (a.upper() + "\r\n", True),
                     (a + "\n\n", False), (a + "\r", False), (" " + a, False), (a + " ", False),
                     (a[:63], False), (a + "0", False), (a[:62] + "g0", False), ("", False)]:
        print(f"key-text {h(text.encode())} {a if ok else '-'}")


FRAMES = [
    # name, material, direction, version, type, key_id, gate, epoch, counter
    ("open", "A", "c2d", 2, 0x10, 1, 0, 0x0BADCAFE, 1),
    ("open-wide", "A", "c2d", 2, 0x10, 7, 2, 0xFFFFFFFF, 0x0102030405060708),
    ("status-query", "A", "c2d", 2, 0x11, 1, 0, 0, 0),
    ("open-key-b", "B", "c2d", 2, 0x10, 2, 0, 0x0BADCAFE, 42),
    ("relay-on", "A", "d2c", 2, 0x90, 1, 0, 0x0BADCAFE, 1),
    ("relay-off", "A", "d2c", 2, 0x91, 1, 0, 0x0BADCAFE, 1),
    ("announcement", "A", "d2c", 2, 0x92, 1, 0, 0x0BADCAFE, 0),
    ("busy", "A", "d2c", 2, 0x93, 1, 0, 0x0BADCAFE, 5),
    ("status-v1-accepted", "A", "d2c", 2, 0x94, 1, 0, 0x0BADCAFE, 9),
    ("stale-epoch", "A", "d2c", 2, 0x9E, 1, 0, 0x12345678, 3),
]


def frame_records():
    print("\n# Frames: requests signed with K_c2d, replies with K_d2c")
    for name, material, direction, version, ftype, key_id, gate, epoch, counter in FRAMES:
        c2d, d2c = direction_keys(MATERIALS[material])
        signed = struct.pack(">BBBBIQ", version, ftype, key_id, gate, epoch, counter)
        tag = hmac.new(c2d if direction == "c2d" else d2c, signed, hashlib.sha256).digest()[:16]
        print(f"frame {name} material={material} dir={direction} ver={version} type={ftype:02x} "
              f"key={key_id} gate={gate} epoch={epoch:08x} counter={counter} hex={(signed + tag).hex()}")


if __name__ == "__main__":
    sha256_records()
    hmac_records()
    material_records()
    key_text_records()
    frame_records()
