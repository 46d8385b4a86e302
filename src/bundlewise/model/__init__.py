"""Pure data of Pulsar load balancing: names, bundles, load reports, decisions.

Standard library only; nothing here imports another bundlewise package.
"""
