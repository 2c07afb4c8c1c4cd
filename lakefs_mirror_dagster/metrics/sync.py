"""What the ``sync`` loop did: passes, copies and errors, counted from each finished pass.

``SyncMetrics.observe`` is a ``ReplicationService.on_synced`` listener: the engine hands it each pass with its
results, and it never reaches into the engine. Labels are bounded: the mirror's name, an action or error kind, a
pass kind; never a ref's commit, an object key or a message.
"""

from __future__ import annotations

import time

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.registry import CollectorRegistry

from ..replication import RefAction, SyncPass

__all__ = ["ERROR_KINDS", "PASS_BUCKETS", "SyncMetrics"]

#: Seconds a pass may take: from an idle retry pass to a backfill of hours.
PASS_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 21600.0)
#: ``lakefs_mirror_errors_total``'s ``kind``: a mirror that could not be synced in a pass; a ref blocked because
#: objects or metadata are missing or invalid at the mirror, or by an error (store, lakeFS, database); a ref that
#: failed otherwise.
ERROR_KINDS = ("mirror", "blocked_missing", "blocked_error", "ref")


class SyncMetrics:
    """The loop's counters, pass histogram and last-pass time (one instance per loop)."""

    def __init__(self) -> None:
        self.objects = Counter(
            "lakefs_mirror_objects_copied_total", "Objects copied into the mirror's store.", ["mirror"], registry=None
        )
        self.bytes = Counter(
            "lakefs_mirror_bytes_copied_total", "Bytes copied into the mirror's store.", ["mirror"], registry=None
        )
        self.commits = Counter(
            "lakefs_mirror_commits_copied_total", "Commits created at the mirror.", ["mirror"], registry=None
        )
        self.refs = Counter(
            "lakefs_mirror_ref_syncs_total",
            "Refs synced, by what the sync did (created, advanced, reset, deleted, unchanged, blocked, deferred).",
            ["mirror", "action"],
            registry=None,
        )
        self.errors = Counter(
            "lakefs_mirror_errors_total",
            "Sync errors by kind: " + ", ".join(ERROR_KINDS) + ".",
            ["mirror", "kind"],
            registry=None,
        )
        self.passes = Histogram(
            "lakefs_mirror_sync_pass_duration_seconds",
            "Duration of sync passes, by kind: full, retry (blocked branches whose cooldown ended), refs (named).",
            ["kind"],
            buckets=PASS_BUCKETS,
            registry=None,
        )
        self.in_flight = Gauge(
            "lakefs_mirror_copies_in_flight_limit",
            "Object copies the mirror's engine let run at once in its last pass that copied (transfer.concurrency; "
            "auto: chosen from the source reads' round trip).",
            ["mirror"],
            registry=None,
        )
        self.round_trip = Gauge(
            "lakefs_mirror_source_read_round_trip_seconds",
            "The source reads' round trip the copies measured in the mirror's last pass that copied: the quickest "
            "time to a first byte of its reads.",
            ["mirror"],
            registry=None,
        )
        self.last_pass = Gauge(
            "lakefs_mirror_sync_last_pass_timestamp_seconds",
            "Unix time at which the last sync pass ended (the loop's start time until its first pass ends).",
            registry=None,
        )
        self.last_pass.set(time.time())  # "no pass for N minutes" counts from the start, not from 1970

    def register(self, registry: CollectorRegistry) -> None:
        for collector in (
            self.objects,
            self.bytes,
            self.commits,
            self.refs,
            self.errors,
            self.passes,
            self.in_flight,
            self.round_trip,
            self.last_pass,
        ):
            registry.register(collector)

    def observe(self, done: SyncPass) -> None:
        """Count one finished pass (``ReplicationService.on_synced``)."""
        for result in done.results:
            if result.error:
                self.errors.labels(result.mirror, "mirror").inc()
            if (flight := result.copies_in_flight) is not None:
                self.in_flight.labels(result.mirror).set(flight.limit)
                if flight.round_trip_seconds is not None:
                    self.round_trip.labels(result.mirror).set(flight.round_trip_seconds)
            for ref in result.refs:
                self.objects.labels(result.mirror).inc(ref.stats.objects_copied)
                self.bytes.labels(result.mirror).inc(ref.stats.bytes_copied)
                self.commits.labels(result.mirror).inc(ref.stats.commits)
                self.refs.labels(result.mirror, ref.action.value).inc()
                if ref.action == RefAction.BLOCKED:
                    self.errors.labels(result.mirror, f"blocked_{ref.blocked_by or 'error'}").inc()
                elif ref.error and ref.action != RefAction.DEFERRED:
                    self.errors.labels(result.mirror, "ref").inc()
        self.passes.labels(done.kind).observe(done.seconds)
        self.last_pass.set(time.time())
