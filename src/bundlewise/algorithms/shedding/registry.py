"""Shedding strategies by name (Pulsar's ``loadBalancerLoadSheddingStrategy``, contract §1, §4).

A name is accepted short (``ThresholdShedder``) or as Pulsar's class name
(``org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder``); each call returns a FRESH instance, since
the strategies keep state (histories, hit counters) exactly where Pulsar's objects do.
``TransferShedder`` belongs to the extensible load manager and is not made here (see ``cli/shed``).
"""

from __future__ import annotations

from collections.abc import Callable

from bundlewise.algorithms.shedding.avg import AvgShedder
from bundlewise.algorithms.shedding.base import SheddingStrategy
from bundlewise.algorithms.shedding.overload import OverloadShedder
from bundlewise.algorithms.shedding.threshold import ThresholdShedder
from bundlewise.algorithms.shedding.uniform import UniformLoadShedder
from bundlewise.config.config import short_class_name
from bundlewise.model.errors import InputError

MODULAR_SHEDDERS: dict[str, Callable[[], SheddingStrategy]] = {
    "OverloadShedder": OverloadShedder,
    "ThresholdShedder": ThresholdShedder,
    "UniformLoadShedder": UniformLoadShedder,
    "AvgShedder": AvgShedder,
}
EXTENSIBLE_SHEDDERS = ("TransferShedder",)


def make_shedding_strategy(name: str, field: str = "--strategy") -> SheddingStrategy:
    """A fresh strategy for ``name``; an unknown name is an ``InputError`` listing the valid ones."""
    factory = MODULAR_SHEDDERS.get(short_class_name(name))
    if factory is None:
        valid = ", ".join([*MODULAR_SHEDDERS, *EXTENSIBLE_SHEDDERS])
        raise InputError(f"unknown shedding strategy {name!r}; expected one of {valid}", field=field)
    return factory()
