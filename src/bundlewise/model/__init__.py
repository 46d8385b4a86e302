"""Pure data of Pulsar load balancing: topic names and the one hash, bundles, load reports and the leader's load
data (modular and extensible), snapshots, decisions with their labels and reasons, the extensible channel's
records and conflict resolver, admin values, versions, durations and the input-error type.

Standard library only; nothing here imports another bundlewise package.
"""
