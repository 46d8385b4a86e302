"""``bundlewise place --extensible`` (contract §4 place, on §6 inputs).

Each step is an extensible snapshot with ``"bundle"`` and optionally ``"candidates"`` and
``"nonPersistent"``.  With ``candidates`` the extensible ``LeastResourceUsageWithWeight`` alone runs on
exactly that list; without them the assignment flow runs: the available brokers, the broker filter
chain (a failing filter ignored), then the strategy (round-robin for excluded namespaces).  ONE
placement object and one ``random.Random(--seed or 0)`` serve every step.  Output, JSON Lines:
``{"step": i, "selected": broker|null, "best": [...]}``.
"""

from __future__ import annotations

import argparse
import random
from typing import Any

from bundlewise.algorithms.extensible.placement import ExtensiblePlacement, FilterContext
from bundlewise.cli.inputs import emit, iterate_steps
from bundlewise.cli.place import STEP_KEYS, parse_step_request, write_table
from bundlewise.config import Config
from bundlewise.model.errors import InputError
from bundlewise.model.extensible import parse_extensible_snapshot


def run_extensible(args: argparse.Namespace, config: Config, docs: list[Any], source: str) -> int:
    seed = getattr(args, "seed", None)
    rng = random.Random(0 if seed is None else seed)
    placement = ExtensiblePlacement()
    rows = []
    for step in iterate_steps(docs, config, source):
        where = f"steps[{step.index}]" if len(docs) > 1 else "snapshot"
        try:
            bundle, candidates, non_persistent = parse_step_request(step.doc, where)
            doc = {k: v for k, v in step.doc.items() if k not in STEP_KEYS}
            snap = parse_extensible_snapshot(doc, where, step.config.weights(), step.now)
        except InputError as e:
            raise e.within(source) from None
        ctx = FilterContext(snap.brokers, snap.lookup_data, step.config, non_persistent)
        selection = placement.select(bundle, snap.available_brokers, ctx, rng, candidates)
        if getattr(args, "format", "json") == "table":
            rows.append((step.index, bundle, selection))
        else:
            emit({"step": step.index, "selected": selection.selected, "best": list(selection.best)})
    if rows:
        write_table(rows)
    return 0
