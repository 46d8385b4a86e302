"""The one topic hash of bundlewise: CRC-32 (IEEE), unsigned, over the UTF-8 full topic name.

Pulsar builds its ``NamespaceBundleFactory`` with Guava's ``Hashing.crc32()`` and widens the
32-bit result with ``padToLong()`` (zero-extension), so the hash lies in ``[0, 2**32 - 1]``
(Guava ``Hashing.crc32``).  ``zlib.crc32`` computes the same function.  Spark's native ``crc32`` is proven
equal to this in tests/pipeline.
"""

from __future__ import annotations

import zlib

FULL_LOWER_BOUND = 0x00000000
FULL_UPPER_BOUND = 0xFFFFFFFF


def crc32_hash(text: str) -> int:
    """Unsigned CRC-32 of ``text`` encoded as UTF-8 ("123456789" -> 0xCBF43926)."""
    return zlib.crc32(text.encode("utf-8")) & 0xFFFFFFFF
