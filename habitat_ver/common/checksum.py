"""A checksum of a checkpoint's payload, to catch bit-flipped tensor data.

torch's zip reader does not check the stored CRC of tensor records, so a
flipped bit in a weight loads without complaint.  The checksum is a SHA-256
over every value of the saved dict, walked in order: tensors by dtype, shape
and raw bytes, containers by type and length, other leaves by type and
``repr``.  What ``torch.load(weights_only=True)`` gives back hashes the same
as what was saved, so the check needs nothing but the loaded dict.
"""

import hashlib
from typing import Any, Dict

import torch

# Key of the checksum in a saved dict; files without it (older ones, upstream
# ones) are loaded unchecked.
CHECKSUM_KEY = "habitat_ver_checksum"
_PREFIX = "sha256:"


def _update(digest: Any, value: Any) -> None:
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu().contiguous()
        digest.update(f"tensor:{tensor.dtype}:{tuple(tensor.shape)}:".encode())
        # A byte view hashes every dtype (bfloat16 included) without conversion.
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().data)
    elif isinstance(value, dict):
        digest.update(f"dict:{len(value)}:".encode())
        for key, item in value.items():
            _update(digest, key)
            _update(digest, item)
    elif isinstance(value, (list, tuple)):
        digest.update(f"{type(value).__name__}:{len(value)}:".encode())
        for item in value:
            _update(digest, item)
    else:
        digest.update(f"{type(value).__name__}:{value!r};".encode())


def payload_checksum(state: Dict[str, Any]) -> str:
    """``"sha256:<hex>"`` over every entry of ``state`` but the checksum itself."""
    digest = hashlib.sha256()
    _update(digest, {k: v for k, v in state.items() if k != CHECKSUM_KEY})
    return _PREFIX + digest.hexdigest()


def with_checksum(state: Dict[str, Any]) -> Dict[str, Any]:
    """A shallow copy of ``state`` with its checksum under :data:`CHECKSUM_KEY`."""
    return {**state, CHECKSUM_KEY: payload_checksum(state)}


def checksum_mismatch(state: Dict[str, Any]) -> bool:
    """True when ``state`` carries a checksum that its payload does not match."""
    stored = state.get(CHECKSUM_KEY)
    return stored is not None and stored != payload_checksum(state)
