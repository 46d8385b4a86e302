"""A store client in its own process, for tests that SIGSTOP or SIGKILL a client.

    python store_client.py ephemeral URL PATH VALUE TIMEOUT   create an ephemeral, then report
        {"deadline": monotonic deadline, "now": monotonic} every 50 ms
    python store_client.py elect URL PATH VALUE TIMEOUT       run for leader, report {"state": …}

Every line on stdout is one JSON object; ``time.monotonic()`` is system-wide on Linux, so the
parent can compare these times with its own.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from bundlewise.live.store import LeaderElection, LeaderElectionState, connect


def say(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


async def ephemeral(url: str, path: str, value: str, timeout: float) -> None:
    store = await connect(url, session_timeout=timeout)
    await store.put(path, value.encode(), -1, ephemeral=True)
    say(created=True, session=store.session_id)
    while True:
        say(deadline=store.fencing_deadline(), now=time.monotonic())
        await asyncio.sleep(0.05)


async def elect(url: str, path: str, value: str, timeout: float) -> None:
    store = await connect(url, session_timeout=timeout)
    election = LeaderElection(store, path, on_state_change=lambda s: say(state=s.value, now=time.monotonic()))
    state = await election.elect({"brokerId": value, "serviceUrl": f"http://{value}"})
    say(state=state.value, now=time.monotonic(), initial=True)
    while True:
        await asyncio.sleep(0.2)
        if election.state is LeaderElectionState.Leading:
            say(state="Leading", now=time.monotonic(), heartbeat=True)


if __name__ == "__main__":
    mode, url, path, value, timeout = sys.argv[1:6]
    body = {"ephemeral": ephemeral, "elect": elect}[mode]
    asyncio.run(body(url, path, value, float(timeout)))
