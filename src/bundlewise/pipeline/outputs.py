"""The run's datasets, written atomically: into a staging folder beside ``--out``, moved into place at the end.

``Outputs(spark, out)`` creates ``<parent>/.<name>.bundlewise-<id>/`` next to ``out``; every dataset of the run
(``topic_samples/`` from the scan tasks, the others from the driver or Spark) is written there.  ``publish()``
then moves the datasets into ``out``: one rename of the staging folder when ``out`` does not exist yet,
otherwise one rename per dataset (the previous dataset of that name is moved aside first and deleted after),
so a reader never sees a half-written dataset and a failed run leaves ``out`` as it was (``discard()``).
Datasets of an earlier run that this run did not produce (e.g. ``topic_samples/`` after a run with
``--no-topic-samples``) are removed from ``out``: they would not match the new ones.  Other files in ``out``
are left alone.

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
    def __init__(self, spark: Any, out: Location) -> None:
        self.spark = spark
        self.out = out
        self.staging = out.sibling(f".{out.name}.bundlewise-{uuid.uuid4().hex[:12]}")
        self.arrow = self.staging.arrow_fs()
        self.written: dict[str, Location] = {}
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
        """Moves the staging folder's datasets into ``out``; returns ``{name: uri}``."""
        if not self._exists(self.out):
            self._move(self.staging, self.out)
            return self.published()
        trash = self.staging.child(".replaced")
        self._mkdirs(trash)
        for name in DATASETS:
            target = self.out.child(name)
            if self._exists(target):
                self._move(target, trash.child(name))
            if name in self.written:
                self._move(self.written[name], target)
        self._delete(self.staging)
        return self.published()

    def discard(self) -> None:
        """Deletes the staging folder (a failed run)."""
        with contextlib.suppress(Exception):  # the original error matters more
            self._delete(self.staging)

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
