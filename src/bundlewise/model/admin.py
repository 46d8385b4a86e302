"""Decisions as the ``pulsar-admin`` commands an operator runs to carry them out.

Spelled as pulsar-admin's ``CmdNamespaces`` spells them (each sends the admin REST call the leader itself makes,
``PUT /admin/v2/namespaces/{tenant}/{namespace}/{bundle}/unload|split``)::

    pulsar-admin namespaces unload TENANT/NS --bundle 0xLLLLLLLL_0xUUUUUUUU [--destinationBroker BROKER]
    pulsar-admin namespaces split-bundle TENANT/NS --bundle 0xLLLLLLLL_0xUUUUUUUU [--unload]

``--destinationBroker`` takes a broker id (``host:port`` of its web service, as load reports name brokers).
A bundle key that is not a bundle name (``bundle-1`` is a valid key inside a snapshot) has no command: None.
Words a shell would split or expand are quoted.
"""

from __future__ import annotations

import shlex

from bundlewise.model.bundles import Bundle
from bundlewise.model.errors import InputError


def _bundle(name: str) -> Bundle | None:
    try:
        return Bundle.parse(name)
    except InputError:
        return None


def unload_command(bundle: str, destination: str | None = None) -> str | None:
    """``pulsar-admin namespaces unload …`` for one bundle (None when ``bundle`` is not a bundle name)."""
    b = _bundle(bundle)
    if b is None:
        return None
    words = ["pulsar-admin", "namespaces", "unload", b.namespace, "--bundle", b.range_name]
    if destination:
        words += ["--destinationBroker", destination]
    return shlex.join(words)


def split_command(bundle: str, unload: bool, algorithm: str | None = None) -> str | None:
    """``pulsar-admin namespaces split-bundle …`` (``--unload`` as the leader's automatic split does when
    ``loadBalancerAutoUnloadSplitBundlesEnabled``); None when ``bundle`` is not a bundle name."""
    b = _bundle(bundle)
    if b is None:
        return None
    words = ["pulsar-admin", "namespaces", "split-bundle", b.namespace, "--bundle", b.range_name]
    if algorithm:
        words += ["--split-algorithm-name", algorithm]
    if unload:
        words.append("--unload")
    return shlex.join(words)
