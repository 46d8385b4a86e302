"""Run results: the one contract of what a run produces, below both the simulator (``sim``) and the live load
manager (``live``), so each fills it and ``report`` renders either from here alone (docs/formats.md).

* ``record``: ``RunResult`` (one strategy's run, simulated or live), ``DispatchRecord`` and ``RunInfo`` (the
  scenario as the report describes it);
* ``decisions``: the ``decisions.jsonl`` row, written (``decision_row``) and read back (``read_row``) in one
  place, with the same fields for both kinds of run;
* ``measure``: the metrics computed from a run's per-tick record (``summarise``, ``Counters``);
* ``catalogue``: which metrics ``summary.json`` holds, in which order, what each means and how it is shown;
* ``write``: the one writer of ``summary.json``, ``timeline.parquet``, ``decisions.jsonl`` (and a live run's
  ``lookups.parquet``).
"""
