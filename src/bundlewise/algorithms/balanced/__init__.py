"""bundlewise's own strategy, ``BalancedPlanShedder`` (docs/balanced.md): a capacity-normalised,
per-resource estimate (``estimate``) smoothed per broker with a trend (``trend``), a budgeted plan of the
largest-impact moves (``planner``), load-aware placement of unowned bundles (``placement``) and the stateful
strategy around them (``shedder``)."""
