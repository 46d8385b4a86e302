"""The etcd clock check (``session``: clock check): a reference lease that is never kept alive.

etcd exposes no clock, but a lease's remaining TTL (``/v3/lease/timetolive``, whole seconds, rounded
down) is the server's own count of the time since the lease was granted.  The lease is granted with
``TTL = REFERENCE_TTL`` after ``granted_at`` (local, taken before the request, so the server's start is
no earlier); a later reading taken after its reply gives ``local elapsed`` and ``store elapsed at least
TTL − remaining − 1`` (the 1 s is the TTL's granularity).  A leader change or restart of etcd only
*extends* leases (``Lessor#Promote``), which can only make the store's elapsed look smaller: a reading
never accuses a correct clock.  A lease that is gone (a store restarted empty, or revoked) restarts
the reference; one close to expiring is replaced.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

from bundlewise.live.store import errors
from bundlewise.live.store.backends.etcd_gateway import EtcdGateway, as_int

log = logging.getLogger(__name__)
REFERENCE_TTL = 600  # seconds
RENEW_BELOW = 60  # replace the reference when fewer seconds remain


class ClockReference:
    def __init__(self, gw: EtcdGateway, report: Callable[[float, float], None]) -> None:
        self._gw = gw
        self._report = report  # (local elapsed, store elapsed at least)
        self._lease = 0
        self._ttl = 0
        self._granted_at = 0.0

    async def read(self) -> None:
        """One reading (the first grants the reference); store errors skip the reading."""
        try:
            if not self._lease:
                await self._grant()
                return
            resp = await self._gw.post("/v3/lease/timetolive", {"ID": str(self._lease)})
            local = time.monotonic() - self._granted_at
            remaining = as_int(resp.get("TTL"))
            if remaining < 0:  # the lease is gone: start again
                self._lease = 0
                return
            self._report(local, float(self._ttl - remaining - 1))
            if remaining < RENEW_BELOW:
                await self.close()
        except errors.ConnectionLossError as e:
            log.debug("clock reading skipped: %r", e)
        except errors.MetadataStoreError as e:  # e.g. the lease is unknown: start again
            log.debug("clock reference reset: %r", e)
            self._lease = 0

    async def _grant(self) -> None:
        granted_at = time.monotonic()
        resp = await self._gw.post("/v3/lease/grant", {"TTL": str(REFERENCE_TTL)})
        lease, ttl = as_int(resp.get("ID")), as_int(resp.get("TTL"))
        if lease and ttl > 0:
            self._lease, self._ttl, self._granted_at = lease, ttl, granted_at

    async def close(self) -> None:
        lease, self._lease = self._lease, 0
        if lease:
            with contextlib.suppress(errors.MetadataStoreError):
                await self._gw.post("/v3/lease/revoke", {"ID": str(lease)}, timeout=2.0)
