"""Read-only views of a running cluster, ours or a real Pulsar's: ``live status`` (``status``), ``live
advise`` (``advise``) and the read-only store client they share (``reader``), which never opens a session,
creates a node or sets a watch."""
