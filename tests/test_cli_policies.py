"""``shed`` and ``place`` with ``--policies FILE`` (docs/placement.md): isolation and anti-affinity applied."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bundlewise.cli.main import main

MB = 1024 * 1024
ISO = "t/iso"
POLICY = {
    "iso-policy": {
        "namespaces": ["t/iso.*"],
        "primary": ["broker-1", "broker-3"],
        "secondary": [],
        "auto_failover_policy": {
            "policy_type": "min_available",
            "parameters": {"min_limit": "1", "usage_threshold": "80"},
        },
    }
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[Any], str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines() if line.strip()], err


def write(tmp_path: Path, doc: Any, name: str) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def snapshot() -> dict[str, Any]:
    """broker-1 overloaded with four bundles of an isolated namespace; broker-2 and broker-3 idle."""
    bundles = [f"{ISO}/0x{i * 0x40000000:08x}_0x{(i + 1) * 0x40000000 if i < 3 else 0xFFFFFFFF:08x}" for i in range(4)]
    data = {
        b: {"shortTermData": {"msgThroughputIn": (i + 1) * MB, "msgThroughputOut": (i + 1) * MB}}
        for i, b in enumerate(bundles)
    }
    return {
        "brokers": {
            "broker-1:8080": {"bandwidthIn": {"usage": 999, "limit": 1000}, "bundles": bundles},
            "broker-2:8080": {"bundles": []},
            "broker-3:8080": {"bundles": []},
        },
        "bundleData": data,
    }


def test_shed_sends_an_isolated_namespace_only_to_its_primaries(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    snap = write(tmp_path, snapshot(), "in.json")
    _, free, _ = run(capsys, "shed", "--strategy", "OverloadShedder", "--seed", "3", snap)
    assert {u["destination"] for u in free[0]["unload"]} == {"broker-2:8080"}  # LeastLongTermMessageRate's pick
    policies = write(tmp_path, POLICY, "policies.json")  # the bare `ns-isolation-policy list` output
    code, out, err = run(capsys, "shed", "--strategy", "OverloadShedder", "--policies", policies, snap)
    assert (code, err) == (0, "")
    assert out[0]["unload"] and {u["destination"] for u in out[0]["unload"]} == {"broker-3:8080"}


def test_shed_keeps_a_bundle_whose_owner_is_its_only_primary(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    only = {"iso-policy": {**POLICY["iso-policy"], "primary": ["broker-1"]}}
    _, out, _ = run(
        capsys,
        "shed",
        "--strategy",
        "OverloadShedder",
        "--policies",
        write(tmp_path, only, "p.json"),
        write(tmp_path, snapshot(), "in.json"),
    )
    assert out[0]["unload"] == [] and out[0]["skipped"]
    for skip in out[0]["skipped"]:
        assert skip["reason"] == f"the isolation policies allow {skip['bundle']} only on its owner broker-1:8080"


def test_place_applies_isolation_and_anti_affinity(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    doc = snapshot() | {"bundle": f"{ISO}/0x00000000_0x40000000"}
    policies = write(
        tmp_path,
        {
            "namespaceIsolationPolicies": POLICY,
            "antiAffinityGroups": {"t/a1": "g", "t/a2": "G"},
        },
        "policies.json",
    )
    _, out, _ = run(
        capsys,
        "place",
        "--strategy",
        "LeastLongTermMessageRate",
        "--policies",
        policies,
        write(tmp_path, doc, "a.json"),
    )
    assert out[0]["best"] == ["broker-3:8080"]  # broker-1 is overloaded (re-check), broker-2 not a primary
    # anti-affinity alone: broker-2 owns t/a1 of the group "g" (t/a2's "G" is the same group)
    groups = write(tmp_path, {"antiAffinityGroups": {"t/a1": "g", "t/a2": "G"}}, "groups.json")
    anti = snapshot()
    anti["brokers"]["broker-1:8080"].pop("bandwidthIn")  # not overloaded: no re-check without the filters
    anti["brokers"]["broker-2:8080"]["bundles"] = ["t/a1/0x00000000_0xffffffff"]
    anti["bundle"] = "t/a2/0x00000000_0xffffffff"
    b = write(tmp_path, anti, "b.json")
    _, out, _ = run(capsys, "place", "--strategy", "LeastLongTermMessageRate", "--policies", groups, b)
    assert out[0]["best"] and set(out[0]["best"]) <= {"broker-1:8080", "broker-3:8080"}
    # with the isolation policy too, broker-1 and broker-3 are the iso-policy's primaries, so broker-2 is the
    # only shared broker left for t/a2 and the anti-affinity filter keeps it (it cannot empty the set)
    _, out, _ = run(capsys, "place", "--strategy", "LeastLongTermMessageRate", "--policies", policies, b)
    assert out[0]["best"] == ["broker-2:8080"]


def test_bad_policies_file_is_a_one_line_error(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    bad = write(tmp_path, {"p": {"namespaces": ["t/.*"], "primary": ["b"]}}, "bad.json")
    code = main(["shed", "--strategy", "OverloadShedder", "--policies", bad, write(tmp_path, snapshot(), "in.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "bad.json" in err and "auto_failover_policy" in err
    assert len(err.strip().splitlines()) == 1


def test_shed_advice_names_the_isolation_policy_that_left_a_broker_out(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
):
    """The advisor traces the placement flow the leader ran, constraints included: broker-2 is not a primary."""
    snap, policies = write(tmp_path, snapshot(), "in.json"), write(tmp_path, POLICY, "policies.json")
    assert main(["shed", "--strategy", "OverloadShedder", "--policies", policies, "--format", "admin", snap]) == 0
    placement = [line for line in capsys.readouterr().out.splitlines() if line.startswith("#   placement:")]
    assert placement == [
        "#   placement: namespace isolation policy (ns-isolation-policy iso-policy) left out broker-2:8080 (0.00%): "
        "not a primary",
        "#   placement: distribute bundles evenly (loadBalancerDistributeBundlesEvenlyEnabled) left out broker-1:8080 "
        "(99.90%): owns 4 bundles of t/iso, the fewest is 0",
    ]
    assert main(["shed", "--strategy", "OverloadShedder", "--format", "admin", snap]) == 0
    assert "isolation" not in capsys.readouterr().out
