"""Keys of the cluster simulator (contract §8): not Pulsar settings, but set the same way; ``[balancer]``/``--set``."""

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
