"""A minimal binary glTF (``.glb``) writer for boxes: the stage of our HAB scene.

habitat-sim loads stages from glTF.  Our apartment's stage is a union of
axis-aligned boxes (floor slabs, walls, ceiling), so one mesh of flat-shaded
boxes with a single material is all we write: positions and normals as float32
vertex attributes, triangles as uint32 indices, in one buffer (glTF 2.0,
section "Binary glTF Layout").
"""

import json
import struct
from typing import List, Sequence, Tuple

import numpy as np

Box = Tuple[Sequence[float], Sequence[float]]  # (min corner, max corner), metres

# Each face: the axis its normal runs along, the sign, and the two other axes
# in the order that makes the triangles counter-clockwise seen from outside.
_FACES = (
    (0, 1, (1, 2)),
    (0, -1, (2, 1)),
    (1, 1, (2, 0)),
    (1, -1, (0, 2)),
    (2, 1, (0, 1)),
    (2, -1, (1, 0)),
)
_GLB_MAGIC, _JSON_CHUNK, _BIN_CHUNK = 0x46546C67, 0x4E4F534A, 0x004E4942
_FLOAT, _UINT32, _ARRAY_BUFFER, _ELEMENT_ARRAY_BUFFER = 5126, 5125, 34962, 34963


def box_mesh(boxes: Sequence[Box]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat-shaded triangles of ``boxes``.

    Returns:
        ``(positions [V, 3] float32, normals [V, 3] float32, indices [F*3] uint32)``,
        four vertices and two outward-facing triangles per box face.
    """
    positions: List[List[float]] = []
    normals: List[List[float]] = []
    indices: List[int] = []
    for low, high in boxes:
        lo, hi = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
        if not np.all(hi > lo):
            raise ValueError(f"a box needs max > min on every axis, got {list(lo)} .. {list(hi)}")
        for axis, sign, (u, v) in _FACES:
            base = len(positions)
            for cu, cv in ((0, 0), (1, 0), (1, 1), (0, 1)):
                corner = np.where(sign > 0, hi, lo).copy()
                corner[u] = (lo, hi)[cu][u]
                corner[v] = (lo, hi)[cv][v]
                positions.append(corner.tolist())
                normal = [0.0, 0.0, 0.0]
                normal[axis] = float(sign)
                normals.append(normal)
            indices += [base, base + 1, base + 2, base, base + 2, base + 3]
    return (
        np.asarray(positions, dtype=np.float32),
        np.asarray(normals, dtype=np.float32),
        np.asarray(indices, dtype=np.uint32),
    )


def glb_bytes(boxes: Sequence[Box], color: Sequence[float] = (0.8, 0.8, 0.75, 1.0)) -> bytes:
    """The ``.glb`` file of ``boxes`` as one mesh with one plain material."""
    positions, normals, indices = box_mesh(boxes)
    blobs = [positions.tobytes(), normals.tobytes(), indices.tobytes()]
    offsets = np.cumsum([0] + [len(b) for b in blobs]).tolist()
    binary = b"".join(blobs)
    views = [
        {"buffer": 0, "byteOffset": offsets[i], "byteLength": len(blobs[i]), "target": target}
        for i, target in enumerate((_ARRAY_BUFFER, _ARRAY_BUFFER, _ELEMENT_ARRAY_BUFFER))
    ]
    accessors = [
        {
            "bufferView": 0,
            "componentType": _FLOAT,
            "count": len(positions),
            "type": "VEC3",
            "min": positions.min(axis=0).tolist(),
            "max": positions.max(axis=0).tolist(),
        },
        {"bufferView": 1, "componentType": _FLOAT, "count": len(normals), "type": "VEC3"},
        {"bufferView": 2, "componentType": _UINT32, "count": len(indices), "type": "SCALAR"},
    ]
    document = {
        "asset": {"version": "2.0", "generator": "habitat_ver.tools.glb"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0, "name": "stage"}],
        "meshes": [
            {
                "primitives": [
                    {"attributes": {"POSITION": 0, "NORMAL": 1}, "indices": 2, "material": 0}
                ]
            }
        ],
        "materials": [
            {"pbrMetallicRoughness": {"baseColorFactor": list(color), "metallicFactor": 0.0}}
        ],
        "buffers": [{"byteLength": len(binary)}],
        "bufferViews": views,
        "accessors": accessors,
    }
    text = json.dumps(document, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 4)  # chunks are 4-byte aligned
    binary += b"\0" * (-len(binary) % 4)
    total = 12 + 8 + len(text) + 8 + len(binary)
    return b"".join(
        (
            struct.pack("<III", _GLB_MAGIC, 2, total),
            struct.pack("<II", len(text), _JSON_CHUNK),
            text,
            struct.pack("<II", len(binary), _BIN_CHUNK),
            binary,
        )
    )
