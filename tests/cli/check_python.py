"""Cross-checks a file written by `sparsenm prune` with Python's safetensors package and an
independent decoder of the element-wise condensed format (docs/FORMAT.md).

usage: check_python.py ORIGINAL.safetensors PRUNED.safetensors
Checks: the pruned file opens with safetensors (metadata, every tensor); tensors that were not
pruned are byte-identical; every element-wise N:M weight decodes (packed little-endian index
fields, LSB first) to values taken from the original at strictly ascending in-window positions,
keeping the N largest magnitudes of every window (ties: kept >= every dropped).
"""
import json
import math
import struct
import sys

import numpy as np
from safetensors import safe_open

DT = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32,
      "U32": np.uint32, "U16": np.uint16, "U8": np.uint8, "BF16": np.uint16}


def raw_tensors(path):
    """Our own minimal reader (numpy has no bfloat16: BF16 comes back as float32)."""
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, e in header.items():
        b, en = e["data_offsets"]
        buf = data[8 + n + b:8 + n + en]
        a = np.frombuffer(buf, dtype=DT[e["dtype"]]).reshape(e["shape"])
        if e["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        out[name] = (e["dtype"], a, buf)
    return meta, out


def check_with_safetensors(path, raw):
    with safe_open(path, framework="numpy") as f:
        keys = set(f.keys())
        assert keys == set(raw), (keys, set(raw))
        for k in keys:
            if raw[k][0] == "BF16":
                continue  # numpy cannot hold bf16; compared through raw bytes instead
            t = f.get_tensor(k)
            assert t.shape == raw[k][1].shape and t.tobytes() == raw[k][2], k
        return f.metadata() or {}


def decode_element(values, indices, n, m, rows, cols):
    bits = max(1, math.ceil(math.log2(m)))
    windows = -(-cols // m)
    assert values.shape == (rows, windows * n), values.shape
    assert indices.shape == (rows, -(-windows * n * bits // 8)), indices.shape
    dense = np.zeros((rows, cols), dtype=np.float64)
    for r in range(rows):
        stream = int.from_bytes(indices[r].tobytes(), "little")
        assert stream >> (windows * n * bits) == 0, f"row {r}: unused index bits are not zero"
        for w in range(windows):
            last = -1
            for j in range(n):
                field = w * n + j
                pos = (stream >> (field * bits)) & ((1 << bits) - 1)
                assert pos < m and pos > last, (r, w, pos, last)
                last = pos
                col = w * m + pos
                v = float(values[r, field])
                if col >= cols:
                    assert v == 0.0, "padding slot holds a nonzero"
                else:
                    dense[r, col] = v
    return dense


def main(original, pruned):
    _, orig = raw_tensors(original)
    meta, new = raw_tensors(pruned)
    st_meta = check_with_safetensors(pruned, new)
    assert st_meta == meta, (st_meta, meta)
    weights = {k[len("sparsenm:"):]: json.loads(v) for k, v in meta.items() if k.startswith("sparsenm:")}
    assert weights, "no condensed weights"
    for name, (dt, a, buf) in orig.items():
        if name in weights:
            continue
        assert name in new and new[name][2] == buf, f"{name} changed"
    checked = 0
    for name, w in weights.items():
        assert w["format_version"] == 1
        rows, cols = w["rows"], w["cols"]
        assert orig[name][1].shape == (rows, cols), name
        pat = w["pattern"]
        if "/" in pat or pat.count(":") != 1:
            continue
        n, m = map(int, pat.split(":"))
        dense = decode_element(new[name + ".values"][1], new[name + ".indices"][1], n, m, rows, cols)
        src = orig[name][1].astype(np.float64)
        kept = dense != 0
        assert np.array_equal(dense[kept], src[kept]), f"{name}: stored values differ from the original"
        for r in range(rows):
            for c0 in range(0, cols, m):
                win = np.abs(src[r, c0:c0 + m])
                k = kept[r, c0:c0 + m]
                assert k.sum() <= n
                if k.sum() < min(n, len(win)):  # fewer kept than allowed: only if the rest are zero
                    assert np.all(win[~k] == 0), (name, r, c0)
                if (~k).any() and k.any():
                    assert win[k].min() >= win[~k].max(), f"{name}: row {r} window {c0 // m} not top-{n}"
        checked += 1
    assert checked > 0, "no element-wise weight checked"
    print(f"python cross-check ok: {len(new)} tensors, {len(weights)} condensed, {checked} decoded")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
