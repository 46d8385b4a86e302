"""Pulsar's extensible load manager (PIP-192/PIP-220): reporting rules, TransferShedder, the
extensible placement and the extensible split strategy (spec Part A)."""
