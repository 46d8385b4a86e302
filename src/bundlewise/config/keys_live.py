"""Keys of the running broker (``bundlewise broker``): metadata session, identity, authentication and
authorization, with Pulsar's ``ServiceConfiguration`` names and defaults.

Token keys follow ``AuthenticationProviderToken`` (``tokenSecretKey`` / ``tokenPublicKey`` in the
``data:;base64,…``, ``file://…``, path or base64 forms of ``AuthTokenUtils#readKeyFromUrl``);
``brokerClientAuthenticationParameters`` is what brokers present to each other
(``token:<jwt>`` or ``file:///path``), as Pulsar's ``AuthenticationToken`` client plugin reads it.
"""

from __future__ import annotations

from bundlewise.config.keys import Key

LIVE_KEYS: tuple[Key, ...] = (
    Key(
        "metadataStoreSessionTimeoutMillis",
        30000,
        "int",
        "ms",
        "Metadata-store session timeout (ZooKeeper session, etcd lease TTL); never scaled by --time-scale",
        dynamic=False,
        minimum=1000,
    ),
    Key(
        "bundlewiseFencingMaxClockRatePpm",
        1000.0,
        "float",
        "ppm",
        "Fencing assumption (not a Pulsar setting): the broker's clock runs slower than the metadata store's by "
        "at most this much; the fencing deadline's margin covers it, and a broker that measures more fences itself",
        dynamic=False,
        minimum=0,
        maximum=500000,
    ),
    Key(
        "statsUpdateFrequencyInSecs",
        60,
        "int",
        "seconds",
        "How often the broker refreshes its topic and bundle stats (the extensible top-bundles report's pace)",
        dynamic=False,
        minimum=1,
    ),
    Key("clusterName", "standalone", "str", "name", "The cluster the broker belongs to", dynamic=False),
    Key("brokerServicePort", 6650, "int", "port", "Port advertised in pulsarServiceUrl", dynamic=False, minimum=0),
    Key("enablePersistentTopics", True, "bool", "", "The broker serves persistent topics", dynamic=False),
    Key("enableNonPersistentTopics", True, "bool", "", "The broker serves non-persistent topics", dynamic=False),
    Key("authenticationEnabled", False, "bool", "", "Require an authenticated role on HTTP requests"),
    Key("authorizationEnabled", False, "bool", "", "Check the role's permissions (with authenticationEnabled)"),
    Key("authenticationProviders", [], "list", "classes", "Authentication providers (token only)"),
    Key("superUserRoles", [], "list", "roles", "Roles that may unload, split and read broker admin data"),
    Key("anonymousUserRole", "", "str", "role", "Role of a request no provider accepted"),
    Key("tokenSecretKey", "", "str", "key", "HMAC key of HS256/384/512 tokens (data:, file:, path or base64)"),
    Key("tokenPublicKey", "", "str", "key", "Public key of RS*/ES*/PS* tokens (data:, file:, path or base64)"),
    Key("tokenPublicAlg", "RS256", "str", "name", "Key family of tokenPublicKey"),
    Key("tokenAuthClaim", "sub", "str", "claim", "Claim holding the role"),
    Key("tokenAudienceClaim", "", "str", "claim", "Claim holding the audience"),
    Key("tokenAudience", "", "str", "name", "The audience this broker accepts"),
    Key("authenticateMetricsEndpoint", False, "bool", "", "Authenticate GET /metrics"),
    Key(
        "brokerClientAuthenticationPlugin",
        "",
        "str",
        "class",
        "How brokers authenticate to each other (AuthenticationToken)",
    ),
    Key(
        "brokerClientAuthenticationParameters",
        "",
        "str",
        "text",
        "Credentials brokers present to each other: token:<jwt> or file:///path",
    ),
    Key("allowAutoTopicCreation", True, "bool", "", "A producer or consumer may create a topic that does not exist"),
    Key(
        "allowAutoTopicCreationType",
        "non-partitioned",
        "str",
        "name",
        "What auto-creation creates: a non-partitioned or a partitioned topic",
        allowed=("non-partitioned", "partitioned"),
    ),
    Key("defaultNumPartitions", 1, "int", "partitions", "Partitions of an auto-created partitioned topic", minimum=1),
    Key(
        "maxMessageSize",
        5242880,
        "int",
        "bytes",
        "Largest message the binary protocol accepts",
        dynamic=False,
        minimum=1024,
    ),
    Key(
        "bundlewiseManagedLedgerStorage",
        "memory",
        "str",
        "name",
        "Where persistent topics keep their messages (not a Pulsar setting): memory (this broker's process; a "
        "moved topic starts empty) or file (ledgers in bundlewiseLedgerDataDir, shared by the cluster's brokers)",
        dynamic=False,
        allowed=("memory", "file"),
    ),
    Key(
        "bundlewiseLedgerDataDir",
        "",
        "str",
        "path",
        "The data directory every broker of the cluster shares for file storage (not a Pulsar setting)",
        dynamic=False,
    ),
    Key(
        "bundlewiseLedgerFsync",
        "always",
        "str",
        "name",
        "When file storage syncs a ledger to disk (not a Pulsar setting): always (before the receipt, as "
        "BookKeeper's journalSyncData), interval (at most every bundlewiseLedgerFsyncIntervalMillis) or never",
        dynamic=False,
        allowed=("always", "interval", "never"),
    ),
    Key(
        "bundlewiseLedgerFsyncIntervalMillis",
        100,
        "int",
        "ms",
        "The sync period of bundlewiseLedgerFsync=interval (not a Pulsar setting)",
        dynamic=False,
        minimum=1,
    ),
    Key(
        "managedLedgerCursorPositionFlushSeconds",
        60,
        "int",
        "seconds",
        "How often the subscriptions' cursors (mark-delete position, acknowledged ranges) are persisted",
        dynamic=False,
        minimum=1,
    ),
    Key(
        "managedLedgerDefaultMarkDeleteRateLimit",
        1.0,
        "float",
        "per second",
        "How often a subscription's changed cursor is persisted while consumers acknowledge (0: at every "
        "acknowledgement, as fast as the broker's sweep); the rest waits for managedLedgerCursorPositionFlushSeconds",
        dynamic=False,
        minimum=0,
    ),
    Key(
        "keepAliveIntervalSeconds",
        30,
        "int",
        "seconds",
        "How often an idle binary connection is probed with PING (and closed without an answer)",
        dynamic=False,
        minimum=1,
    ),
)
