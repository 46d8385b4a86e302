"""Shared fixtures: ONE SparkSession for the whole run (local[2], 2 shuffle partitions, UI off)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from bundlewise.pipeline.session import get_session

    session = get_session("local[2]", shuffle_partitions=2)
    yield session
    session.stop()
