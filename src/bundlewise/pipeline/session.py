"""The SparkSession of the pipeline: local mode by default, any cluster through ``master`` or ``spark-submit``.

``get_session`` builds (or returns the active) session with the Spark UI off, quiet logs, Arrow enabled, and
``spark.sql.shuffle.partitions`` set from ``shuffle_partitions`` (default: the default parallelism, at least 2:
the shuffled tables of this pipeline are the small aggregated ones).  Without ``master`` the master comes from
``spark-submit --master`` or ``spark-defaults.conf``, else ``local[*]``.  ``PYSPARK_PYTHON`` defaults to the
running interpreter so executors use the same environment.  ``run_session`` gives a command its session and
stops it when the command ends (unless the process already had one: tests share one).

The driver's JVM starts for every command, so its start-up is cut (``BUNDLEWISE_FAST_JVM=0`` turns this off)
with a class-data-sharing archive of the classes Spark loads (Java's AppCDS): the first run writes it at exit
into ``$BUNDLEWISE_CACHE_DIR`` (default ``~/.cache/bundlewise``), later runs map it instead of loading and
verifying thousands of classes — the session starts in about half the time.  (The JIT's quick compiler alone,
``-XX:TieredStopAtLevel=1``, would start the first job sooner still, but halves the speed of Spark's own
readers and writers on the general path.)  Spark's own log (log4j) goes to the command's log file when
``BUNDLEWISE_LOG_FILE`` names one (``cli.logs``: the default), else errors only to stderr (``--verbose``);
the JVM's own warnings go to stderr (stdout is the command's JSON).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_LOG4J2_FILE = """status = error
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:bundlewise.logFile}
appender.file.append = true
appender.file.createOnDemand = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""

_LOG4J2 = """status = error
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _log_config(to_file: bool) -> str:
    """A log4j2 configuration (written once to the temp dir): to the file of ``-Dbundlewise.logFile``
    (warnings and errors), or to stderr (errors only)."""
    name, text = (
        ("bundlewise-log4j2-file.properties", _LOG4J2_FILE) if to_file else ("bundlewise-log4j2.properties", _LOG4J2)
    )
    path = os.path.join(tempfile.gettempdir(), name)
    if not os.path.exists(path):
        temp = f"{path}.{os.getpid()}"
        with open(temp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(temp, path)
    return path


def _cache_dir() -> str:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("BUNDLEWISE_CACHE_DIR") or os.path.join(root, "bundlewise")


def _archive_key(spark_home: str) -> str:
    """What the archive depends on: the JVM and Spark's class path (the jars, by name and size)."""
    jars = sorted(glob.glob(os.path.join(spark_home, "jars", "*.jar")))
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else (shutil.which("java") or "")
    digest = hashlib.sha256(os.path.realpath(java).encode())
    for jar in jars:
        digest.update(f"{jar}:{os.path.getsize(jar)}".encode())
    return digest.hexdigest()[:16]


def _writing(path: str) -> bool:
    """Is a live process (a JVM dumping its archive at exit) still writing ``path``?"""
    needle = path.encode()
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(cmdline, "rb") as fh:
                if needle in fh.read():
                    return True
        except OSError:
            continue
    return False


def class_archive_option(spark_home: str) -> str | None:
    """``-XX:SharedArchiveFile=…`` when the archive exists, else ``-XX:ArchiveClassesAtExit=…`` to write it
    (under a temporary name, adopted by a later run once its JVM has finished writing it); None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    cache = _cache_dir()
    final = os.path.join(cache, f"spark-classes-{_archive_key(spark_home)}.jsa")
    for candidate in glob.glob(f"{final}.*.tmp"):  # archives of earlier runs whose JVMs have exited
        if not _writing(candidate):
            with contextlib.suppress(OSError):
                if os.path.exists(final) or os.path.getsize(candidate) == 0:
                    os.remove(candidate)
                else:
                    os.replace(candidate, final)
    if os.path.exists(final):
        return f"-XX:SharedArchiveFile={final}"
    try:
        os.makedirs(cache, exist_ok=True)
    except OSError:
        return None
    return f"-XX:ArchiveClassesAtExit={final}.{os.getpid()}.tmp"


def _java_options() -> str:
    log_file = os.environ.get("BUNDLEWISE_LOG_FILE")
    options = [f"-Dlog4j2.configurationFile=file:{_log_config(bool(log_file))}"]
    if log_file:
        options.append(f"-Dbundlewise.logFile={log_file}")
    options += ["-Xlog:disable", "-Xlog:all=warning:stderr"]
    if os.environ.get("BUNDLEWISE_FAST_JVM", "1") != "0":
        from pyspark.find_spark_home import _find_spark_home

        archive = class_archive_option(_find_spark_home())
        if archive is not None:
            options.append(archive)
    return " ".join(options)


def get_session(master: str | None = None, shuffle_partitions: int | None = None, app_name: str = "bundlewise") -> Any:
    """A SparkSession for the pipeline (returns ``pyspark.sql.SparkSession``)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # under spark-submit: its JVM, master and settings
    if (master or ("" if submitted else "local")).startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active  # one session per process: the caller's settings stay as they are
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    builder = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.inMemoryColumnarStorage.compressed", "false")
    )
    if not submitted:  # the driver's JVM is started here: its memory and options are ours to set
        builder = builder.config("spark.driver.memory", os.environ.get("BUNDLEWISE_DRIVER_MEMORY", "4g")).config(
            "spark.driver.extraJavaOptions", _java_options()
        )
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if shuffle_partitions is None:
        parallelism = session.sparkContext.defaultParallelism
        session.conf.set("spark.sql.shuffle.partitions", str(max(2, parallelism)))
    return session


@contextmanager
def run_session(master: str | None = None) -> Iterator[Any]:
    """The session for one command: the process's active one, else a new one stopped when the command ends."""
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is not None:
        yield get_session(master)
        return
    session = get_session(master)
    try:
        yield session
    finally:
        session.stop()
