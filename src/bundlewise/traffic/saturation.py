"""Capacity saturation: how much of the traffic a broker is asked to carry it can deliver.

A broker cannot send more than its NIC nor use more than all of its cores.  Given the traffic *offered* to
a broker (message rates ``r_in, r_out``, throughput ``t_in, t_out``), with its ``BrokerSpec`` cost model:

* CPU: the traffic's share of the cores is ``V = cores_used − cpu_base_cores``; when ``cores_used`` exceeds
  ``cpu_cores`` only ``s_cpu = (cpu_cores − cpu_base_cores) / V`` of it can be served (0 when the base alone
  fills the cores), else ``s_cpu = 1``;
* NIC: inbound ``s_nic_in = min(1, nic / t_in)``, outbound ``s_nic_out = min(1, nic / t_out)`` with ``nic`` the
  NIC's bytes per second (``nic_mbps · 10⁶ / 8``);
* the broker delivers the fraction ``s_in = min(s_cpu, s_nic_in)`` of its inbound traffic (messages and bytes)
  and ``s_out = min(s_cpu, s_nic_out)`` of its outbound traffic.  The delivered traffic then uses at most all
  cores and at most the NIC in each direction, so the usage the broker *measures* — what its load report
  carries (``LocalBrokerData``, ``BrokerLoadData``) — never exceeds a limit, as a real broker's cannot.

The rest is not lost: it waits (producers' pending sends, consumers' unread backlog) and is offered again
later (``sim.backlog``).  ``served`` is the rule for one broker (a live broker emulating its traffic);
``service_factors`` evaluates it for every broker slot at once (the simulator); a test proves them equal.
``capped`` is what a report carries: a measured usage (CPU jitter included) never above its limit.
"""

from __future__ import annotations

import numpy as np

from bundlewise.traffic.cost import BrokerSpec, Capacities, Usage, traffic_cores


def served(spec: BrokerSpec, rate_in: float, rate_out: float, tput_in: float, tput_out: float) -> tuple[float, float]:
    """``(s_in, s_out)``: the fractions of the offered inbound and outbound traffic ``spec`` delivers."""
    variable = spec.traffic_cores(rate_in, rate_out, tput_in, tput_out)
    room = spec.cpu_cores - spec.cpu_base_cores
    s_cpu = 1.0 if variable <= max(room, 0.0) else max(0.0, room) / variable
    nic = spec.nic_mbps * 1e6 / 8
    s_in = min(s_cpu, 1.0 if tput_in <= nic else nic / tput_in)
    s_out = min(s_cpu, 1.0 if tput_out <= nic else nic / tput_out)
    return s_in, s_out


def service_factors(
    capacity: Capacities, rate_in: np.ndarray, rate_out: np.ndarray, tput_in: np.ndarray, tput_out: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``served`` for every broker slot (arrays over slots)."""
    variable = traffic_cores(capacity, rate_in, rate_out, tput_in, tput_out)
    room = capacity.cpu_cores - capacity.cpu_base
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s_cpu = np.where(variable <= np.maximum(room, 0.0), 1.0, np.maximum(0.0, room) / variable)
        nic = capacity.nic_mbps * 1e6 / 8
        s_in = np.minimum(s_cpu, np.where(tput_in <= nic, 1.0, nic / tput_in))
        s_out = np.minimum(s_cpu, np.where(tput_out <= nic, 1.0, nic / tput_out))
    return s_in, s_out


def capped(capacity: Capacities, usage: Usage) -> Usage:
    """The usage a broker measures and reports: each resource at most its limit."""
    cores = np.minimum(usage.cpu_cores, capacity.cpu_cores)
    return Usage(
        cores,
        cores / capacity.cpu_cores,
        np.minimum(usage.bandwidth_in, 1.0),
        np.minimum(usage.bandwidth_out, 1.0),
    )
