"""What each broker of one ``bundlewise broker`` process is given: ``--web`` once per broker, and the per-broker
options beside it, checked before anything starts (docs/live/broker.md §2.2).

* ``--web HOST:PORT`` (repeatable): one broker each, its id ``HOST:PORT``;
* ``--broker-service-port PORT``: the binary protocol's port (``brokerServicePort``), once per ``--web`` when
  there are several; with one ``--web`` it may be left out (``brokerServicePort`` from the configuration);
* ``--cores``, ``--nic-mbps``, ``--decisions``, ``--load-data-log``: given once (every broker gets it -- a log
  file then takes every broker's rows, each naming its broker) or once per ``--web``, in the same order.

Refused with ``InputError`` naming the option: a count that is neither one nor the ``--web`` count, a
``--web`` that is not ``HOST:PORT``, and a port given twice (web and binary ports together).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from bundlewise.model.errors import InputError

_HOSTPORT = re.compile(r"^([A-Za-z0-9._-]+):([0-9]{1,5})$")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class BrokerSlot:
    host: str
    port: int
    broker_service_port: int | None  # None: the configuration's brokerServicePort
    cores: float
    nic_mbps: float
    decisions: str | None
    load_data_log: str | None

    @property
    def web(self) -> str:
        return f"{self.host}:{self.port}"


def host_port(text: str) -> tuple[str, int]:
    m = _HOSTPORT.match(text)
    if m is None or not 0 < int(m.group(2)) < 65536:
        raise InputError(f"expected HOST:PORT, got {text!r}", field="--web")
    return m.group(1), int(m.group(2))


def per_broker(values: Sequence[T] | None, n: int, flag: str, default: T) -> list[T]:
    """``values`` spread over ``n`` brokers: none (``default``), one for all, or one each."""
    if not values:
        return [default] * n
    if len(values) == 1:
        return [values[0]] * n
    if len(values) != n:
        raise InputError(f"expected once, or once per --web ({n}), got {len(values)} values", field=flag)
    return list(values)


def broker_slots(
    web: Sequence[str],
    broker_service_ports: Sequence[int] | None,
    cores: Sequence[float] | None,
    nic_mbps: Sequence[float] | None,
    decisions: Sequence[str] | None,
    load_data_logs: Sequence[str] | None,
) -> list[BrokerSlot]:
    hosts = [host_port(w) for w in web]
    n = len(hosts)
    seen: dict[tuple[str, int], str] = {}
    for (host, port), text in zip(hosts, web, strict=True):
        if (host, port) in seen:
            raise InputError(f"expected distinct HOST:PORT values, got {text!r} twice", field="--web")
        seen[(host, port)] = "--web"
    ports: list[int | None] = [None] * n
    if broker_service_ports or n > 1:
        given = list(broker_service_ports or [])
        if len(given) != n:
            raise InputError(f"expected one per --web ({n}), got {len(given)}", field="--broker-service-port")
        for (host, _), port in zip(hosts, given, strict=True):
            if not 0 < port < 65536:
                raise InputError(f"expected a port from 1 to 65535, got {port}", field="--broker-service-port")
            if (host, port) in seen:
                raise InputError(
                    f"expected a port no other broker of this process uses, got {port} twice "
                    f"(also {seen[(host, port)]})",
                    field="--broker-service-port",
                )
            seen[(host, port)] = "--broker-service-port"
        ports = list(given)
    files = {}
    for flag, paths in (("--decisions", decisions), ("--load-data-log", load_data_logs)):
        spread: list[str | None] = list(per_broker(paths, n, flag, None))
        files[flag] = spread
    return [
        BrokerSlot(host, port, bport, c, m, d, ld)
        for (host, port), bport, c, m, d, ld in zip(
            hosts,
            ports,
            per_broker(cores, n, "--cores", 8.0),
            per_broker(nic_mbps, n, "--nic-mbps", 10000.0),
            files["--decisions"],
            files["--load-data-log"],
            strict=True,
        )
    ]
