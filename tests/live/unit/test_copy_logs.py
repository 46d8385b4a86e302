"""``--keep-logs`` copies the processes' logs and the leaders' JSON Lines, never file storage's ledger segments
(which end in ``.log`` too: a 40-minute run kept 465 MB of them)."""

from __future__ import annotations

from pathlib import Path

from bundlewise.live.harness.cluster import LEDGER_DATA, copy_logs


def test_logs_and_decisions_are_copied_and_ledger_segments_are_not(tmp_path: Path) -> None:
    src = tmp_path / "cluster"
    for name in ("20749.log", "decisions-20749.jsonl", "store/etcd.log", f"{LEDGER_DATA}/ledgers/00000001.log"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(name)
    (src / "notes.txt").write_text("not a log")
    copy_logs(src, tmp_path / "kept")
    kept = sorted(str(p.relative_to(tmp_path / "kept")) for p in (tmp_path / "kept").rglob("*") if p.is_file())
    assert kept == ["20749.log", "decisions-20749.jsonl", "store/etcd.log"]
    assert (tmp_path / "kept" / "store" / "etcd.log").read_text() == "store/etcd.log"
