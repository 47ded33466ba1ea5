"""Steering vectors made with numpy, written as bare steer.* tensors for `kvsteer vectors import`
(docs/FORMAT.md). The vectors here are the per-layer directions of an existing kvsteer file, read
back with numpy, so the round trip can be checked; in your own work they come from your own
computation: values[l] and keys[l], float32 [H_kv, D] per decoder layer l.

usage: python3 raw_vectors.py SOURCE.safetensors RAW.safetensors
then:  build/app/kvsteer vectors import RAW.safetensors --model DIR --out VECTORS.safetensors
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16}


def read_safetensors(path):
    """name -> numpy array, from the file's JSON header and raw little-endian data."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    start = 8 + n
    arrays = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        arrays[name] = np.frombuffer(data[start + begin:start + end], dtype=DTYPES[t["dtype"]]).reshape(t["shape"])
    return arrays


def write_safetensors(path, arrays):
    """What safetensors.numpy.save_file(arrays, path) writes, for float32 arrays and no metadata."""
    header, blobs, offset = {}, [], 0
    for name, a in arrays.items():
        blob = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)   # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    source, out = sys.argv[1], sys.argv[2]
    tensors = read_safetensors(source)
    layers = sorted(int(name.split(".")[-1]) for name in tensors if name.startswith("steer.values."))
    values = {l: tensors[f"steer.values.{l}"].astype(np.float32) for l in layers}
    keys = {l: tensors[f"steer.keys.{l}"].astype(np.float32) for l in layers if f"steer.keys.{l}" in tensors}
    raw = {f"steer.values.{l}": values[l] for l in layers}
    raw.update({f"steer.keys.{l}": keys[l] for l in keys})
    write_safetensors(out, raw)
    print(f"wrote {out}: {len(raw)} tensors, layers {layers[0]}..{layers[-1]}")


if __name__ == "__main__":
    main()
