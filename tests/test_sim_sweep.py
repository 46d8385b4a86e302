"""``bundlewise sweep``: grid parsing and a small sweep run as Spark tasks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from bundlewise.cli.main import main
from bundlewise.model.errors import InputError
from bundlewise.sim.sweep import parse_grid


def test_grid_is_the_cartesian_product_with_a_strategy_axis() -> None:
    points = parse_grid(
        ["loadBalancerBrokerThresholdShedderPercentage=5,10", "lowerBoundarySheddingEnabled=true"],
        ["ThresholdShedder", "AvgShedder"],
    )
    assert points == [
        {
            "strategy": "ThresholdShedder",
            "loadBalancerBrokerThresholdShedderPercentage": "5",
            "lowerBoundarySheddingEnabled": "true",
        },
        {
            "strategy": "ThresholdShedder",
            "loadBalancerBrokerThresholdShedderPercentage": "10",
            "lowerBoundarySheddingEnabled": "true",
        },
        {
            "strategy": "AvgShedder",
            "loadBalancerBrokerThresholdShedderPercentage": "5",
            "lowerBoundarySheddingEnabled": "true",
        },
        {
            "strategy": "AvgShedder",
            "loadBalancerBrokerThresholdShedderPercentage": "10",
            "lowerBoundarySheddingEnabled": "true",
        },
    ]


@pytest.mark.parametrize(
    ("axis", "message"),
    [("nokey", "expected KEY=V1,V2"), ("fooBar=1", "unknown configuration key"), ("strategy=", "expected KEY=V1,V2")],
)
def test_bad_grid_axes_are_input_errors(axis: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_grid([axis], ["ThresholdShedder"])


def test_bad_grid_value_exits_2_before_spark(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", "--cluster", "idle-broker", "--grid", "lowerBoundarySheddingEnabled=maybe"])
    err = capsys.readouterr().err
    assert code == 2 and "lowerBoundarySheddingEnabled: expected true or false" in err and err.count("\n") == 1


@pytest.mark.spark
def test_sweep_runs_each_point_as_a_spark_task(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sweep.parquet"
    code = main(
        [
            "sweep",
            "--cluster",
            "idle-broker",
            "--master",
            "local[2]",
            "--out",
            str(out),
            "--grid",
            "strategy=ThresholdShedder",
            "--grid",
            "lowerBoundarySheddingEnabled=false,true",
        ]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["rows"]
    assert [r["lowerBoundarySheddingEnabled"] for r in rows] == ["false", "true"]
    # ten brokers at 80 %, one idle: only lower-boundary mode sheds
    assert rows[0]["unloads"] == 0 and rows[1]["unloads"] > 0
    table = pq.read_table(out)
    assert table.num_rows == 2 and table.column("unloads").to_pylist() == [float(r["unloads"]) for r in rows]


def test_the_sweep_table_prints_units_like_simulate_and_collapses_identical_runs() -> None:
    """OverloadShedder ignores loadBalancerBrokerThresholdShedderPercentage: its three runs give the same figures
    and become one line listing the three values (wall time aside); ThresholdShedder's differ and stay apart."""
    from bundlewise.sim.sweep import format_rows

    key = "loadBalancerBrokerThresholdShedderPercentage"
    rows = [
        {"strategy": "OverloadShedder", key: p, "load_std_mean": 0.1311, "unloads": 0, "wall_seconds": 1.0 + p}
        for p in (5, 10, 20)
    ] + [
        {
            "strategy": "ThresholdShedder",
            key: p,
            "load_std_mean": 0.08 + p / 1000,
            "unloads": 20 - p,
            "wall_seconds": 2.0,
        }
        for p in (5, 20)
    ]
    assert format_rows(rows, ("load_std_mean", "unloads", "wall_seconds")).splitlines() == [
        "strategy          BrokerThresholdShedderPercentage  runs  load_std_mean  unloads  wall_seconds",
        "                                                                     pp  bundles             s",
        "----------------  --------------------------------  ----  -------------  -------  ------------",
        "OverloadShedder   5,10,20                              3          13.11        0         6.000",
        "ThresholdShedder  5                                    1           8.50       15         2.000",
        "ThresholdShedder  20                                   1          10.00        0         2.000",
    ]
