"""``make demo``: map topics to bundles and split a hot bundle with each algorithm."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from bundlewise.cli.main import main as cli


def run() -> int:
    topics = [f"persistent://acme/orders/orders-partition-{i}" for i in range(8)]
    print("== topic -> bundle (4 bundles, CRC-32 of the full name)")
    cli(["bundle", "--bundles", "4", *topics])
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "topics.json"
        f.write_text(json.dumps([{"name": t, "msgRateIn": 4000.0 * (i + 1), "msgThroughputIn": 4e6 * (i + 1)}
                                 for i, t in enumerate(topics)]))
        for algorithm in ("range_equally_divide", "topic_count_equally_divide", "flow_or_qps_equally_divide"):
            print(f"== split acme/orders/0x00000000_0xffffffff with {algorithm}")
            cli(["split", "--algorithm", algorithm, "--bundle", "acme/orders/0x00000000_0xffffffff",
                 "--topics", str(f)])
    return 0


if __name__ == "__main__":
    raise SystemExit(run())
