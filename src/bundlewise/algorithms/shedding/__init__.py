"""Shedding: which bundles to unload from which brokers (one module per strategy)."""
