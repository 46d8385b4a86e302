"""Pulsar's metadata paths, in one place (``LoadBalanceResources``, ``ServiceUnitUtils``,
``LocalPoliciesResources``, ``ModularLoadManagerImpl``, ``ExtensibleLoadManagerImpl``).

===== ===================================================== =========================================
P1/P2 ``/loadbalance/brokers/{brokerId}``                    ephemeral lock: LocalBrokerData (modular)
                                                               or BrokerLookupData (extensible)
P3    ``/loadbalance/leader``                               ephemeral: LeaderBroker (modular)
P4    ``/loadbalance/extension/leader``                     ephemeral: LeaderBroker (extensible)
P5    ``/loadbalance/broker-time-average/{brokerId}``       TimeAverageBrokerData
P6    ``/loadbalance/bundle-data/{tenant}/{ns}/{range}``    BundleData
P7    ``/loadbalance/resource-quota/{bundle}`` and ``…/default``  ResourceQuota (legacy)
P8    ``/namespace/{tenant}/{ns}/{range}``                  ephemeral lock: NamespaceEphemeralData
P9    ``/admin/local-policies/{tenant}/{ns}``               LocalPolicies (versioned writes)
P10   ``/admin/policies/{tenant}/{ns}``                     Policies (configuration store)
P11   ``/service_unit_state/{tenant}/{ns}/{range}``         ServiceUnitStateData (metadata-store channel)
P12   ``/admin/partitioned-topics/{tenant}/{ns}/{domain}/{topic}``  PartitionedTopicMetadata
P13   ``/managed-ledgers/{tenant}/{ns}/{domain}/{topic}``   a persistent topic exists (ManagedLedgerInfo)
===== ===================================================== =========================================

bundlewise-specific (Pulsar keeps these on non-persistent system topics, keyed by broker id):

* ``/loadbalance/extension/broker-load/{brokerId}``: BrokerLoadData (``loadbalancer-broker-load-data``);
* ``/loadbalance/extension/top-bundles/{brokerId}``: TopBundlesLoadData (``loadbalancer-top-bundles-load-data``).

A bundle is its full name ``{namespace}/0xLLLLLLLL_0xUUUUUUUU`` (the namespace may be an old-style
``property/cluster/ns``); a namespace is ``tenant/ns``.
"""

from __future__ import annotations

import re

from bundlewise.model.errors import InputError

BROKERS_ROOT = "/loadbalance/brokers"
LEADER = "/loadbalance/leader"
EXTENSION_LEADER = "/loadbalance/extension/leader"
BROKER_TIME_AVERAGE_ROOT = "/loadbalance/broker-time-average"
BUNDLE_DATA_ROOT = "/loadbalance/bundle-data"
RESOURCE_QUOTA_ROOT = "/loadbalance/resource-quota"
RESOURCE_QUOTA_DEFAULT = RESOURCE_QUOTA_ROOT + "/default"
OWNERSHIP_ROOT = "/namespace"
LOCAL_POLICIES_ROOT = "/admin/local-policies"
CLUSTERS_ROOT = "/admin/clusters"
POLICIES_ROOT = "/admin/policies"
SERVICE_UNIT_STATE_ROOT = "/service_unit_state"
PARTITIONED_TOPICS_ROOT = "/admin/partitioned-topics"
MANAGED_LEDGERS_ROOT = "/managed-ledgers"
EXTENSION_BROKER_LOAD_ROOT = "/loadbalance/extension/broker-load"
EXTENSION_TOP_BUNDLES_ROOT = "/loadbalance/extension/top-bundles"

_RANGE = r"0x[0-9a-fA-F]{8}_0x[0-9a-fA-F]{8}"
SERVICE_UNIT_STATE_PATH = re.compile(rf"^{SERVICE_UNIT_STATE_ROOT}/.*/{_RANGE}$")  # MTV VALID_PATH_REG_EX
_BUNDLE = re.compile(rf"^(?P<ns>[^/]+(?:/[^/]+){{1,2}})/(?P<range>{_RANGE})$")
_NAMESPACE = re.compile(r"^[^/]+(?:/[^/]+){1,2}$")


def _segment(value: str, what: str) -> str:
    if not value or "/" in value or value in (".", ".."):
        raise InputError(f"expected a {what} without '/', got {value!r}", field=what)
    return value


def _bundle(bundle: str) -> str:
    if not _BUNDLE.match(bundle):
        raise InputError(f"expected tenant/namespace/0xLLLLLLLL_0xUUUUUUUU, got {bundle!r}", field="bundle")
    return bundle


def _namespace(namespace: str) -> str:
    if not _NAMESPACE.match(namespace):
        raise InputError(f"expected tenant/namespace, got {namespace!r}", field="namespace")
    return namespace


def broker(broker_id: str) -> str:
    """P1 (modular) / P2 (extensible): the broker's registration lock."""
    return f"{BROKERS_ROOT}/{_segment(broker_id, 'broker id')}"


def broker_time_average(broker_id: str) -> str:
    """P5."""
    return f"{BROKER_TIME_AVERAGE_ROOT}/{_segment(broker_id, 'broker id')}"


def bundle_data(bundle: str) -> str:
    """P6."""
    return f"{BUNDLE_DATA_ROOT}/{_bundle(bundle)}"


def resource_quota(bundle: str) -> str:
    """P7 for one bundle (``RESOURCE_QUOTA_DEFAULT`` is the default quota)."""
    return f"{RESOURCE_QUOTA_ROOT}/{_bundle(bundle)}"


def ownership(bundle: str) -> str:
    """P8: the owning broker's ephemeral lock."""
    return f"{OWNERSHIP_ROOT}/{_bundle(bundle)}"


def local_policies(namespace: str) -> str:
    """P9."""
    return f"{LOCAL_POLICIES_ROOT}/{_namespace(namespace)}"


def policies(namespace: str) -> str:
    """P10 (configuration store)."""
    return f"{POLICIES_ROOT}/{_namespace(namespace)}"


def cluster_root(cluster: str) -> str:
    """``/admin/clusters/{cluster}``: the cluster's data, isolation policies and failure domains."""
    return f"{CLUSTERS_ROOT}/{_segment(cluster, 'cluster')}"


def isolation_policies(cluster: str) -> str:
    """``/admin/clusters/{cluster}/namespaceIsolationPolicies`` (``NamespaceIsolationPolicies``)."""
    return f"{cluster_root(cluster)}/namespaceIsolationPolicies"


def failure_domains(cluster: str) -> str:
    """``/admin/clusters/{cluster}/failureDomain`` (one child per domain, ``FailureDomain``)."""
    return f"{cluster_root(cluster)}/failureDomain"


def service_unit_state(bundle: str) -> str:
    """P11: the extensible channel's record of a bundle."""
    return f"{SERVICE_UNIT_STATE_ROOT}/{_bundle(bundle)}"


def partitioned_topic(namespace: str, domain: str, encoded_local: str) -> str:
    """P12 (``NamespaceResources.PartitionedTopicResources``); the local name URL-encoded."""
    return f"{PARTITIONED_TOPICS_ROOT}/{_namespace(namespace)}/{domain}/{_segment(encoded_local, 'topic')}"


def managed_ledger(namespace: str, domain: str, encoded_local: str) -> str:
    """P13 (``MetaStoreImpl``'s managed-ledger node of a persistent topic); the local name URL-encoded."""
    return f"{MANAGED_LEDGERS_ROOT}/{_namespace(namespace)}/{domain}/{_segment(encoded_local, 'topic')}"


def extension_broker_load(broker_id: str) -> str:
    """The extensible broker-load store's entry of a broker (bundlewise-specific path)."""
    return f"{EXTENSION_BROKER_LOAD_ROOT}/{_segment(broker_id, 'broker id')}"


def extension_top_bundles(broker_id: str) -> str:
    """The extensible top-bundles store's entry of a broker (bundlewise-specific path)."""
    return f"{EXTENSION_TOP_BUNDLES_ROOT}/{_segment(broker_id, 'broker id')}"


def bundle_of(path: str, root: str) -> str | None:
    """The bundle name of a P6 / P8 / P11 path under ``root``, or None when it is not one."""
    prefix = root + "/"
    if not path.startswith(prefix):
        return None
    rest = path[len(prefix) :]
    return rest if _BUNDLE.match(rest) else None
