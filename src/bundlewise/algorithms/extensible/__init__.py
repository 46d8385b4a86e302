"""Pulsar's extensible load manager (PIP-192/PIP-220, ``org.apache.pulsar.broker.loadbalance.extensions``):
reporting rules, TransferShedder, the extensible placement and the extensible split strategy."""
