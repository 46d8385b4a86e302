"""The one ``--out`` policy (``files.atomic``): staged beside the target, published whole, refused when the
target holds something unless overwriting, nothing left behind by a failure or Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bundlewise.files import atomic
from bundlewise.model.errors import InputError


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def siblings(path: Path) -> list[str]:
    return sorted(os.listdir(path.parent))


MARKED = {"_SUCCESS": b"written by bundlewise\n"}  # the marker every published folder holds


def ours(folder: Path) -> Path:
    """``folder`` made to look like a published bundlewise output (what ``--overwrite`` may replace)."""
    folder.mkdir(parents=True, exist_ok=True)
    atomic.mark(str(folder))
    return folder


def test_a_new_target_appears_only_when_the_block_ends(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with atomic.stage(str(out), overwrite=False) as staging:
        Path(staging.path, "summary.json").write_text("{}")
        assert not out.exists()  # nothing at the target while the work runs
        assert Path(staging.path).parent == tmp_path and Path(staging.path).name.startswith(".out.bundlewise-")
    assert tree(out) == {**MARKED, "summary.json": b"{}"}
    assert siblings(out) == ["out"]


def test_an_empty_existing_folder_is_replaced_without_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with atomic.stage(str(out), overwrite=False) as staging:
        Path(staging.path, "a").write_text("1")
    assert tree(out) == {**MARKED, "a": b"1"}


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_a_target_that_holds_something_is_refused_before_any_work(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "out"
    if kind == "folder":
        out.mkdir()
        (out / "old.txt").write_text("keep")
    else:
        out.write_text("keep")
    with pytest.raises(InputError) as e:
        atomic.stage(str(out), overwrite=False, directory=kind == "folder")
    what = "is not empty" if kind == "folder" else "exists"
    assert str(e.value) == f"{out}: --out: {what}; pass --overwrite to replace it"
    assert siblings(out) == ["out"]  # no staging entry was made


def test_overwrite_replaces_the_target_whole(tmp_path: Path) -> None:
    out = ours(tmp_path / "out")
    (out / "topic_samples").mkdir(parents=True)
    (out / "topic_samples" / "part-0.parquet").write_text("stale")
    (out / "bundle_load").mkdir()
    (out / "bundle_load" / "part-0.parquet").write_text("old")
    with atomic.stage(str(out), overwrite=True) as staging:
        Path(staging.path, "bundle_load").mkdir()
        Path(staging.path, "bundle_load", "part-0.parquet").write_text("new")
    assert tree(out) == {**MARKED, "bundle_load/part-0.parquet": b"new"}  # no stale topic_samples/ beside the new data
    assert siblings(out) == ["out"]


def test_an_error_in_the_work_leaves_the_target_as_it_was(tmp_path: Path) -> None:
    out = ours(tmp_path / "out")
    (out / "report.html").write_text("old report")
    with pytest.raises(ValueError, match="boom"), atomic.stage(str(out), overwrite=True) as staging:
        Path(staging.path, "summary.json").write_text("new")
        raise ValueError("boom")
    assert tree(out) == {**MARKED, "report.html": b"old report"}
    assert siblings(out) == ["out"]


def test_ctrl_c_in_the_work_becomes_interrupted_and_names_the_target(tmp_path: Path) -> None:
    out = ours(tmp_path / "out")
    (out / "summary.json").write_text("old")
    with pytest.raises(atomic.Interrupted) as e, atomic.stage(str(out), overwrite=True) as staging:
        Path(staging.path, "summary.json").write_text("new")
        raise KeyboardInterrupt
    assert str(e.value) == f"interrupted: {out} was left as it was"
    assert tree(out) == {**MARKED, "summary.json": b"old"}
    assert siblings(out) == ["out"]


def test_a_file_target_is_replaced_in_one_rename(tmp_path: Path) -> None:
    out = tmp_path / "rows.parquet"
    out.write_bytes(b"old rows " + atomic.FILE_MARK)
    with atomic.stage(str(out), overwrite=True, directory=False) as staging:
        assert staging.path.endswith(".parquet") and os.path.getsize(staging.path) == 0
        Path(staging.path).write_bytes(b"new rows")
        assert out.read_bytes() == b"old rows " + atomic.FILE_MARK
    assert out.read_bytes() == b"new rows"
    assert siblings(out) == ["rows.parquet"]


def test_a_folder_where_a_file_belongs_is_refused_even_with_overwrite(tmp_path: Path) -> None:
    (tmp_path / "rows.parquet").mkdir()
    with pytest.raises(InputError, match="is a directory; expected a file name"):
        atomic.stage(str(tmp_path / "rows.parquet"), overwrite=True, directory=False)


def test_an_unwritable_place_fails_before_the_work(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(InputError) as e:
        atomic.stage(str(blocker / "out.parquet"), overwrite=False, directory=False)
    assert str(e.value) == f"{blocker}/out.parquet: --out: {blocker} is a file, not a folder"


@pytest.mark.parametrize("target", ["/", ".", ".."])
def test_overwrite_never_replaces_a_root_or_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / "f").write_text("x")
    monkeypatch.chdir(tmp_path / "cwd")
    with pytest.raises(InputError, match="refusing to write over this directory"):
        atomic.stage(target, overwrite=True)


def test_staging_left_by_a_killed_run_is_removed_by_the_next_run(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)  # that process has exited
    stale = tmp_path / f".out.bundlewise-{pid}-0123abcd"
    stale.mkdir()
    (stale / "half.parquet").write_text("half")
    other = tmp_path / f".other.bundlewise-{pid}-0123abcd"  # another target's: not ours to remove
    other.mkdir()
    with atomic.stage(str(tmp_path / "out"), overwrite=False) as staging:
        Path(staging.path, "x").write_text("1")
    assert sorted(os.listdir(tmp_path)) == [other.name, "out"]


def test_ctrl_c_during_the_renames_waits_until_they_are_done(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = ours(tmp_path / "out")
    (out / "old").write_text("old")
    staging = atomic.stage(str(out), overwrite=True)
    Path(staging.path, "new").write_text("new")
    real_rename = os.rename
    calls = []

    def rename_then_ctrl_c(a: str, b: str) -> None:
        real_rename(a, b)
        calls.append(b)
        if len(calls) == 1:  # Ctrl-C between moving the old folder aside and moving the new one in
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(atomic.os, "rename", rename_then_ctrl_c)
    with pytest.raises(atomic.Interrupted) as e:
        staging.publish()
    monkeypatch.undo()
    assert str(e.value) == f"interrupted after {out} was written in full"  # the publication completed
    assert tree(out) == {**MARKED, "new": b"new"}
    assert siblings(out) == ["out"]


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_overwrite_refuses_what_bundlewise_did_not_write(tmp_path: Path, kind: str) -> None:
    out = tmp_path / ("out" if kind == "folder" else "rows.parquet")
    if kind == "folder":
        out.mkdir()
        (out / "thesis.tex").write_text("years of work")
        (out / "_SUCCESS").write_text("")  # Spark's marker is empty: not bundlewise's
    else:
        out.write_bytes(b"PAR1 someone else's rows PAR1")
    with pytest.raises(InputError) as e:
        atomic.stage(str(out), overwrite=True, directory=kind == "folder")
    what = "has no _SUCCESS of bundlewise" if kind == "folder" else "has no mark of bundlewise"
    assert str(e.value) == (
        f"{out}: --out: was not written by bundlewise ({what}); --overwrite replaces only bundlewise's own "
        "outputs: name a new one, or empty or remove it yourself"
    )
    assert siblings(out) == [out.name]  # untouched, no staging entry
    if kind == "folder":
        assert tree(out) == {"_SUCCESS": b"", "thesis.tex": b"years of work"}


@pytest.mark.parametrize("content", [b"", b"notes"])
def test_a_file_is_never_turned_into_a_folder(tmp_path: Path, content: bytes) -> None:
    out = tmp_path / "out"
    out.write_bytes(content)
    with pytest.raises(InputError) as e:
        atomic.stage(str(out), overwrite=True)
    assert str(e.value) == f"{out}: --out: is a file; expected a folder (a file is never replaced by one)"
    assert out.read_bytes() == content


def test_an_empty_out_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        atomic.stage("", overwrite=True)
    assert str(e.value) == "--out: expected a path, got an empty string"


def test_a_published_output_can_be_overwritten_again(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for run in ("first", "second"):
        with atomic.stage(str(out), overwrite=True) as staging:
            Path(staging.path, "summary.json").write_text(run)
    assert tree(out) == {**MARKED, "summary.json": b"second"}
