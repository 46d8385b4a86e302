"""The named columns of the simulator's traffic arrays, one definition for every per-tick phase.

Every traffic array of the simulator -- the workload's rates (four arrays over topics), the demand, offered and
delivered traffic per bundle (n × 4), their sums per broker (slots × 4), the backlog (n × 4) -- has the columns in
the workload's order: ``RATE_IN, RATE_OUT, TPUT_IN, TPUT_OUT`` (messages/s in and out, bytes/s in and out).  The
leader's time averages keep ``TimeAverageMessageData``'s field order instead (``AVERAGE_ORDER``: throughputs
first), so a report's samples are ``per_bundle[:, AVERAGE_ORDER]``.
"""

from __future__ import annotations

import numpy as np

RATE_IN, RATE_OUT, TPUT_IN, TPUT_OUT = 0, 1, 2, 3
INBOUND = (RATE_IN, TPUT_IN)
OUTBOUND = (RATE_OUT, TPUT_OUT)
AVERAGE_ORDER = [TPUT_IN, TPUT_OUT, RATE_IN, RATE_OUT]
"""``TimeAverageMessageData``'s order: msgThroughputIn, msgThroughputOut, msgRateIn, msgRateOut."""


def messages(x: np.ndarray) -> np.ndarray:
    """msg/s in + out, per row of an (… × 4) traffic array."""
    out: np.ndarray = x[..., RATE_IN] + x[..., RATE_OUT]
    return out


def throughput(x: np.ndarray) -> np.ndarray:
    """bytes/s in + out, per row of an (… × 4) traffic array."""
    out: np.ndarray = x[..., TPUT_IN] + x[..., TPUT_OUT]
    return out
