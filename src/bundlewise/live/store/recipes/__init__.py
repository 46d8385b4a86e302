"""Recipes built on the ``live.store.MetadataStore`` protocol only, one per module: leader election
(``election``), resource locks (``lock``), versioned read-modify-write (``versioned``) and a table view
(``table_view``)."""
