"""The run's datasets, written atomically: into a staging folder beside ``--out``, moved into place at the end.

The policy is the one of every command (``files.atomic``, docs/commands.md): an existing non-empty ``--out`` is
refused unless ``overwrite``, which replaces it whole (no dataset of an earlier run survives beside the new
ones); a failed or interrupted run leaves ``--out`` as it was (``discard()``); every dataset of a published run
carries Hadoop's ``_SUCCESS`` marker.  A local ``--out`` is staged and published by ``files.atomic`` itself; a
remote one (``hdfs://``, ``s3a://``…) gets a staging folder ``<parent>/.<name>.bundlewise-<id>/`` beside it and
the same steps through its file system: one rename into place, the old folder renamed aside first and deleted
after when overwriting.

Files are handled through ``pyarrow.fs`` when pyarrow can open ``out`` here, else through Hadoop's
``FileSystem`` (``locations.hadoop_*``).  Small tables are written by pyarrow when it can (no Spark job),
Spark DataFrames by Spark's Parquet writer.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame

from bundlewise.files import atomic
from bundlewise.model.errors import InputError
from bundlewise.pipeline import locations
from bundlewise.pipeline.locations import Location

DATASETS = (
    "topic_samples",
    "bundle_load",
    "broker_load",
    "split_candidates",
    "namespaces",
    "rejects",
    "broker_reports",
)
"""Every dataset a run may write under ``--out``."""


class Outputs:
    def __init__(self, spark: Any, out: Location, overwrite: bool = False) -> None:
        self.spark = spark
        self.out = out
        self.overwrite = overwrite
        self.written: dict[str, Location] = {}
        self.local = atomic.stage(out.path, overwrite) if out.path is not None else None
        if self.local is not None:
            self.staging = Location.of(self.local.path)
            self.arrow = self.staging.arrow_fs()
            return
        self.staging = out.sibling(f".{out.name}.bundlewise-{uuid.uuid4().hex[:12]}")
        self.arrow = self.staging.arrow_fs()
        try:
            filled = not overwrite and self._exists(out) and self._nonempty(out)
        except Exception as e:  # an unreachable file system (Py4J or pyarrow errors)
            raise InputError(f"cannot write: {locations.first_line(e)}", source=out.uri) from None
        if filled:
            raise InputError("is not empty; pass --overwrite to replace it", source=out.uri, field="--out")
        if overwrite and self._exists(out) and self._nonempty(out) and not self._exists(out.child(atomic.MARKER)):
            raise InputError(
                f"was not written by bundlewise (has no {atomic.MARKER}); --overwrite replaces only bundlewise's "
                "own outputs: name a new one, or empty or remove it yourself",
                source=out.uri,
                field="--out",
            )
        try:
            if self.arrow is not None:
                self.arrow[0].create_dir(self.arrow[1], recursive=True)
            else:
                locations.hadoop_mkdirs(spark, self.staging)
        except OSError as e:
            raise InputError(f"cannot write: {e}", source=out.path or out.uri) from None
        except InputError as e:
            raise InputError(str(e).removeprefix(f"{self.staging.uri}: "), source=out.uri) from None

    @property
    def via_arrow(self) -> bool:
        """Can tasks and the driver write into the staging folder with pyarrow?"""
        return self.arrow is not None

    def folder(self, name: str) -> Location:
        """``staging/name``, created empty, for tasks that write their own files into it."""
        where = self.staging.child(name)
        if self.arrow is not None:
            fs, path = where.arrow_fs() or self.arrow
            fs.create_dir(path, recursive=True)
        else:
            locations.hadoop_mkdirs(self.spark, where)
        self.written[name] = where
        return where

    def write_table(self, name: str, table: pa.Table) -> Location:
        """A small table → ``staging/name/part-00000.parquet`` (pyarrow), or through Spark's writer."""
        where = self.staging.child(name)
        if self.arrow is None:
            return self.write_frame(name, self.spark.createDataFrame(table), coalesce=True)
        fs, path = where.arrow_fs() or self.arrow
        fs.create_dir(path, recursive=True)
        pq.write_table(table, f"{path}/part-00000.parquet", filesystem=fs)
        self.written[name] = where
        return where

    def write_frame(self, name: str, df: DataFrame, mode: str = "overwrite", coalesce: bool = False) -> Location:
        """A DataFrame → ``staging/name`` with Spark's Parquet writer (``coalesce``: one file, for small ones)."""
        where = self.staging.child(name)
        try:
            (df.coalesce(1) if coalesce else df).write.mode(mode).parquet(where.uri)
        except AnalysisException as e:
            raise InputError(f"cannot write: {str(e).splitlines()[0]}", source=self.out.child(name).uri) from None
        self.written[name] = where
        return where

    def published(self) -> dict[str, str]:
        """Where each dataset will be once published."""
        return {name: self.out.child(name).uri for name in self.written}

    def publish(self) -> dict[str, str]:
        """Marks every dataset ``_SUCCESS`` and moves the staging folder into place; returns ``{name: uri}``."""
        for where in self.written.values():
            self._touch(where.child("_SUCCESS"))
        if self.local is not None:
            self.local.publish()  # leaves the marker (files.atomic)
            return self.published()
        self._touch(self.staging.child(atomic.MARKER))  # remote: the marker by its name alone
        if self._exists(self.out):
            aside = self.out.sibling(f".{self.out.name}.bundlewise-old-{uuid.uuid4().hex[:12]}")
            self._move(self.out, aside)
            self._move(self.staging, self.out)
            self._delete(aside)
        else:
            self._move(self.staging, self.out)
        return self.published()

    def discard(self) -> None:
        """Deletes the staging folder (a failed run)."""
        with contextlib.suppress(Exception):  # the original error matters more
            if self.local is not None:
                self.local.discard()
            else:
                self._delete(self.staging)

    def _nonempty(self, where: Location) -> bool:
        if self.arrow is not None:
            fs, path = where.arrow_fs() or self.arrow
            if fs.get_file_info(path).type != pafs.FileType.Directory:
                return True
            return bool(fs.get_file_info(pafs.FileSelector(path, recursive=False)))
        return locations.hadoop_nonempty(self.spark, where)

    def _touch(self, where: Location) -> None:
        if self._exists(where):
            return
        if self.arrow is not None:
            fs, path = where.arrow_fs() or self.arrow
            fs.open_output_stream(path).close()
        else:
            locations.hadoop_touch(self.spark, where)

    def _exists(self, where: Location) -> bool:
        if self.arrow is not None:
            fs, path = where.arrow_fs() or self.arrow
            return bool(fs.get_file_info(path).type != pafs.FileType.NotFound)
        return locations.hadoop_exists(self.spark, where)

    def _mkdirs(self, where: Location) -> None:
        if self.arrow is not None:
            fs, path = where.arrow_fs() or self.arrow
            fs.create_dir(path, recursive=True)
        else:
            locations.hadoop_mkdirs(self.spark, where)

    def _move(self, source: Location, target: Location) -> None:
        if self.arrow is not None:
            fs, src = source.arrow_fs() or self.arrow
            _, dst = target.arrow_fs() or self.arrow
            try:
                fs.move(src, dst)
            except OSError as e:
                raise InputError(f"cannot move the finished dataset into place: {e}", source=target.uri) from None
        else:
            locations.hadoop_rename(self.spark, source, target)

    def _delete(self, where: Location) -> None:
        if self.arrow is not None:
            fs, path = where.arrow_fs() or self.arrow
            if fs.get_file_info(path).type != pafs.FileType.NotFound:
                fs.delete_dir(path)
        else:
            locations.hadoop_delete(self.spark, where)
