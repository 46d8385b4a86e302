"""The records a broker publishes to start a change (``ServiceUnitStateChannelImpl#publish*EventAsync``).

Each takes the key's current record in this broker's view (``None`` when absent) and stamps
``versionId = current + 1`` (1 for a new key), which is what makes a record written from a stale view
lose against the store's newer value:

* assign (``publishAssignEventAsync``): ``Assigning(dst = chosen broker, src = None)``;
* unload / transfer (``publishUnloadEventAsync``): ``Releasing(dst = destination or None, src = source,
  force = the command's force)``;
* split (``publishSplitEventAsync``): ``Splitting(dst = None, src = source, children)``.
"""

from __future__ import annotations

from bundlewise.model.channel import ServiceUnitState, ServiceUnitStateData, Split, Unload, next_version_id


def assign_record(current: ServiceUnitStateData | None, dst_broker: str, now: int) -> ServiceUnitStateData:
    return ServiceUnitStateData(
        ServiceUnitState.Assigning, dst_broker, None, timestamp=now, version_id=next_version_id(current)
    )


def unload_record(current: ServiceUnitStateData | None, unload: Unload, now: int) -> ServiceUnitStateData:
    return ServiceUnitStateData(
        ServiceUnitState.Releasing,
        unload.dest_broker,
        unload.source_broker,
        force=unload.force,
        timestamp=now,
        version_id=next_version_id(current),
    )


def split_record(current: ServiceUnitStateData | None, split: Split, now: int) -> ServiceUnitStateData:
    return ServiceUnitStateData(
        ServiceUnitState.Splitting,
        None,
        split.source_broker,
        split_service_unit_to_dest_broker=split.split_service_unit_to_dest_broker,
        timestamp=now,
        version_id=next_version_id(current),
    )
