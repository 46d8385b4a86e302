"""Keys of the cluster simulator (docs/simulator.md): not Pulsar settings, but set the same way.

A scenario's ``[balancer]``, ``--config`` and ``--set`` carry them.
"""

from __future__ import annotations

from bundlewise.config.keys import Key

SIM_KEYS: tuple[Key, ...] = (
    Key(
        "unloadBlipSeconds",
        1.0,
        "float",
        "seconds",
        "Simulator: client-visible unavailability of each topic of an unloaded bundle",
        minimum=0,
    ),
)
