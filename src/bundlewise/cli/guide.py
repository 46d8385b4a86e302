"""What ``--help`` shows a user beside the options: a description where the command's own is missing, the URL
forms the command accepts, and examples.  One table for every command, applied by ``cli.main`` when it builds
the parser, so that each command's help reads the same way."""

from __future__ import annotations

STORE_URLS = """\
store URLs:
  zk://HOST:PORT[,HOST:PORT...]/CHROOT      ZooKeeper, e.g. zk://zk-1:2181,zk-2:2181/pulsar
  etcd://[USER:PASSWORD@]HOST:PORT[,...]/PREFIX   etcd v3, e.g. etcd://127.0.0.1:2379/pulsar"""

SPARK_URLS = """\
paths and Spark masters:
  --input / --out   a local path, file:///path, or any URL Spark reads: s3a://bucket/key, hdfs://nn:8020/path,
                    gs://bucket/path, abfss://container@account.dfs.core.windows.net/path
  --master          local[N] | local[*] | spark://HOST:PORT[,HOST:PORT] | yarn | k8s://https://HOST:PORT"""

DESCRIPTIONS = {
    "simulate": """\
Replay a cluster scenario (or a recorded workload) through Pulsar's shedding strategies and compare them:
balance, overload, churn and client impact per strategy, as JSON, a table, or a folder with an HTML report.
Without --cluster it runs the bundled default scenario with every Pulsar strategy; --strategy all adds
bundlewise's own: BalancedPlanShedder (modular) and BalancedTransferShedder (extensible). Bundled
scenarios: default, steady-skew, rolling-restart, scale-out, hot-namespace-burst, heterogeneous,
idle-broker, pip364-over-unloading, throttled-dispatch.
--out DIR gets summary.json, timeline.parquet, decisions.jsonl and report.html, moved into place when
complete; an existing non-empty DIR is refused unless --overwrite, and Ctrl-C leaves it as it was.""",
    "sweep": """\
Simulate one scenario across a grid of settings, each grid point a Spark task (needs the spark extra).
Without --grid the grid is loadBalancerBrokerThresholdShedderPercentage=5,10,20 x
loadBalancerHistoryResourcePercentage=0.5,0.9 for each strategy. stdout: the rows as JSON, or with
--format table one line per distinct result (identical runs collapsed, with units). Progress (Spark tasks
done of total, elapsed) on stderr when it is a terminal. Ctrl-C cancels the jobs and exits 130.""",
    "live": "The live load manager: play a scenario on a real store and real broker processes (up), read a "
    "cluster's brokers, leader and load from its store (status), or ask a strategy what it would unload there "
    "(advise). status and advise only read: they work on a Pulsar cluster's own ZooKeeper.",
    "live up": """\
Start a metadata store (unless --store), broker processes and lookup clients, play the scenario's workload
and events (restart = SIGKILL and start again) for real, then stop everything it started. stdout: the
summary (the simulator's metrics measured for real, plus lookup latency and failover times); --out DIR gets
the simulator's files plus lookups.parquet. --managers modular,extensible runs it under both load managers.""",
    "live status": "Brokers, leader, per-broker load and bundle counts, read from the store alone (read-only; "
    "works on a Pulsar cluster's own ZooKeeper). A store that does not answer within --timeout is one error line.",
    "live advise": "Read the load data a leader reads from the store (modular layout) and print what the shedding "
    "strategy would unload, as `bundlewise shed` prints it, with its warnings; nothing is written. On an "
    "extensible cluster: TransferShedder by default, then the owners' split check (`split-check --extensible`).",
}

EXAMPLES = {
    "bundle": "bundlewise bundle my-topic persistent://acme/orders/t-1\n"
    "bundlewise bundle --bundles 16 --format table < topics.txt",
    "split": "bundlewise split --algorithm range_equally_divide --bundle public/default/0x00000000_0x40000000\n"
    "bundlewise split --algorithm topic_count_equally_divide --bundle t/ns/0x00000000_0xffffffff --topics t.json",
    "split-check": "bundlewise split-check reports/\n"
    "bundlewise split-check --format admin --bundle-counts acme/orders=4 reports/",
    "shed": "bundlewise shed --strategy ThresholdShedder --format admin reports/\n"
    "bundlewise shed --strategy AvgShedder --set loadBalancerAvgShedderHitCountHighThreshold=2 steps.jsonl",
    "place": "bundlewise place --strategy LeastLongTermMessageRate --bundle acme/orders/0x00000000_0x20000000 reports/",
    "pipeline": "bundlewise pipeline --input topics.parquet --out load/\n"
    "bundlewise pipeline --input s3a://bucket/dumps/ --input-format broker-stats --out load/ --master local[4]",
    "throttle": "bundlewise throttle --format table throttle.json",
    "simulate": "bundlewise simulate --format table\n"
    "bundlewise simulate --cluster scale-out --strategy all --out sim-out/\n"
    "bundlewise simulate --cluster my-cluster.toml --workload trace.parquet --strategy ThresholdShedder",
    "sweep": "bundlewise sweep --format table\n"
    "bundlewise sweep --cluster idle-broker --grid loadBalancerBrokerThresholdShedderPercentage=5,10 "
    "--strategy ThresholdShedder AvgShedder --out sweep.parquet",
    "store": "bundlewise store start\nbundlewise store start --zookeeper --port 2181 --data zk-data/",
    "store start": "bundlewise store start\nbundlewise store start --zookeeper --port 2181 --data zk-data/",
    "broker": "bundlewise broker --store etcd://127.0.0.1:2379/pulsar --web 127.0.0.1:8080 --workload trace.jsonl",
    "live": "bundlewise live up --brokers 5 --time-scale 60 --out live-out/\n"
    "bundlewise live status --store zk://zk-1:2181/pulsar",
    "live up": "bundlewise live up --brokers 5 --cluster scale-out --time-scale 60 --out live-out/\n"
    "bundlewise live up --store etcd://127.0.0.1:2379/bw --managers modular,extensible",
    "live status": "bundlewise live status --store zk://zk-1:2181,zk-2:2181/pulsar\n"
    "bundlewise live status --store etcd://127.0.0.1:2379/pulsar --format json",
    "live advise": "bundlewise live advise --store zk://zk-1:2181/pulsar --strategy ThresholdShedder --format admin",
}

URLS = {
    "pipeline": SPARK_URLS,
    "sweep": SPARK_URLS,
    "simulate": SPARK_URLS.replace("--input / --out", "--workload     "),
    "broker": STORE_URLS,
    "live": STORE_URLS,
    "live up": STORE_URLS,
    "live status": STORE_URLS,
    "live advise": STORE_URLS,
}


def epilog(command: str) -> str | None:
    """The URL forms and examples shown under a command's options."""
    parts = []
    if command in URLS:
        parts.append(URLS[command])
    if command in EXAMPLES:
        lines = "\n".join(f"  {line}" for line in EXAMPLES[command].splitlines())
        parts.append(f"examples:\n{lines}")
    return "\n\n".join(parts) or None
