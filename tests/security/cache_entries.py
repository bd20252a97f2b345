"""Reading and writing kernel cache entries as an attacker (or a test) would: the two formats of
core/cache/disk_cache.h, each sealed the way the stax that wrote the directory expects.

  STAXKC02 (before issue 28): magic, u64 key size, u64 payload size, u64 checksum, key, payload;
           the checksum is hash64(payload, seed = hash64(key)), unkeyed: anyone recomputes it.
  STAXKC03: magic, u64 key size, u64 payload size, 16-byte MAC, key, payload; the MAC is
           SipHash-2-4-128 under <root>/cache.key over magic, sizes, key and payload.

An entry is rewritten in the format it was found in, so one test drives both the old and the new
binary (tests/security/README.md: how each test was run against main's build). cpu_cpp's payload
("STAXCPU2", then length-prefixed names, source and object) is taken apart here too.
"""
import os
import struct

M64 = (1 << 64) - 1
K1, K2, K3 = 0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f, 0x165667b19e3779f9


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _mix64(x):
    x ^= x >> 30
    x = (x * 0xbf58476d1ce4e5b9) & M64
    x ^= x >> 27
    x = (x * 0x94d049bb133111eb) & M64
    x ^= x >> 31
    return x


def _lane(acc, word):
    return (_rotl((acc + word * K2) & M64, 29) * K1) & M64


def hash64(b, seed=0):
    """core/cache/hash.cpp's hash64."""
    n, p = len(b), 0
    a, bb, c, d = (seed + K1) & M64, seed ^ K2, (seed + K3) & M64, (seed - K1) & M64
    while n >= 32:
        w = struct.unpack_from("<4Q", b, p)
        a, bb, c, d = _lane(a, w[0]), _lane(bb, w[1]), _lane(c, w[2]), _lane(d, w[3])
        p += 32
        n -= 32
    h = _mix64(a) ^ _rotl(_mix64(bb), 16) ^ _rotl(_mix64(c), 32) ^ _rotl(_mix64(d), 48)
    h ^= (len(b) * K3) & M64
    while n >= 8:
        h = _lane(h, struct.unpack_from("<Q", b, p)[0])
        p += 8
        n -= 8
    while n > 0:
        h = (_rotl(h ^ ((b[p] * K3) & M64), 23) * K1) & M64
        p += 1
        n -= 1
    return _mix64(h)


def _sipround(v):
    v0, v1, v2, v3 = v
    v0 = (v0 + v1) & M64; v1 = _rotl(v1, 13); v1 ^= v0; v0 = _rotl(v0, 32)
    v2 = (v2 + v3) & M64; v3 = _rotl(v3, 16); v3 ^= v2
    v0 = (v0 + v3) & M64; v3 = _rotl(v3, 21); v3 ^= v0
    v2 = (v2 + v1) & M64; v1 = _rotl(v1, 17); v1 ^= v2; v2 = _rotl(v2, 32)
    return [v0, v1, v2, v3]


def siphash128(key, data):
    """SipHash-2-4 with the 128-bit output, as (h0, h1)."""
    k0, k1 = struct.unpack("<2Q", key)
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d ^ 0xee,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]
    n = len(data)
    for p in range(0, n - n % 8, 8):
        m = struct.unpack_from("<Q", data, p)[0]
        v[3] ^= m
        v = _sipround(_sipround(v))
        v[0] ^= m
    tail = data[n - n % 8:]
    m = ((n & 0xff) << 56) | int.from_bytes(tail, "little")
    v[3] ^= m
    v = _sipround(_sipround(v))
    v[0] ^= m
    v[2] ^= 0xee
    for _ in range(4):
        v = _sipround(v)
    h0 = v[0] ^ v[1] ^ v[2] ^ v[3]
    v[1] ^= 0xdd
    for _ in range(4):
        v = _sipround(v)
    return h0, v[0] ^ v[1] ^ v[2] ^ v[3]


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def read_entry(path):
    """-> (magic, key, payload)"""
    b = read_bytes(path)
    magic = b[:8]
    ksize, psize = struct.unpack_from("<2Q", b, 8)
    head = 32 if magic == b"STAXKC02" else 40
    return magic, b[head:head + ksize], b[head + ksize:head + ksize + psize]


def seal(magic, key, payload, root):
    """An entry's bytes in `magic`'s format; STAXKC03 is sealed with <root>/cache.key."""
    sizes = struct.pack("<2Q", len(key), len(payload))
    if magic == b"STAXKC02":
        return magic + sizes + struct.pack("<Q", hash64(payload, hash64(key))) + key + payload
    mac_key = read_bytes(os.path.join(root, "cache.key"))
    h0, h1 = siphash128(mac_key, magic + sizes + key + payload)
    return magic + sizes + struct.pack("<2Q", h0, h1) + key + payload


def write_entry(path, magic, key, payload, root):
    data = seal(magic, key, payload, root)
    mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o600
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def cpu_fields(payload):
    """cpu_cpp's payload -> [names, source, object]"""
    assert payload[:8] == b"STAXCPU2", payload[:8]
    out, p = [], 8
    for _ in range(3):
        n = struct.unpack_from("<Q", payload, p)[0]
        out.append(payload[p + 8:p + 8 + n])
        p += 8 + n
    return out


def cpu_payload(names, source, obj):
    out = b"STAXCPU2"
    for f in (names, source, obj):
        out += struct.pack("<Q", len(f)) + f
    return out


def entries(root):
    kd = os.path.join(root, "kernels")
    return sorted(os.path.join(kd, n) for n in os.listdir(kd) if n.endswith(".entry"))
