"""Per mirror and branch: how far behind its source, and in which state, read at scrape time.

The figures are ``lakefs-mirror status``'s (``region.status.status_report``, from the mirrors database: no
lakeFS call), so a scrape, the command and the API never disagree. Any process sharing the mirrors database
exposes the same values: ``serve``, and the ``sync`` loop.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..mirrors import MirrorState
from ..region import ReplicationService
from ..region.status import BRANCH_STATES, status_report

__all__ = ["StatusCollector"]

log = logging.getLogger(__name__)


class StatusCollector(Collector):
    """The status gauges, computed on each scrape from ``service``'s mirrors database (this region's mirrors)."""

    def __init__(self, service: ReplicationService) -> None:
        self._service = service
        self._warned = False

    def describe(self) -> list[GaugeMetricFamily]:
        return list(self._families())  # the names without reading the database at registration

    @classmethod
    def describe_families(cls) -> list[GaugeMetricFamily]:
        """The gauges this collector exposes, without a service (for checks of names and help texts)."""
        return list(cls._families())

    def collect(self) -> Iterator[GaugeMetricFamily]:
        behind, lag, branch_state, mirror_state, up = self._families()
        try:
            report = status_report(self._service, recent=0)
        except Exception as exc:  # a scrape never fails for it: the gauge says so
            level = logging.DEBUG if self._warned else logging.WARNING
            self._warned = True
            log.log(level, "metrics: cannot read the mirrors' status: %s: %s", type(exc).__name__, exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        for m in report:
            for lifecycle in MirrorState:
                mirror_state.add_metric([m.name, lifecycle.value], 1.0 if m.state == lifecycle.value else 0.0)
            for b in m.branches:
                if b.behind_seconds is not None:
                    behind.add_metric([m.name, b.branch], b.behind_seconds)
                if b.lag_seconds is not None:
                    lag.add_metric([m.name, b.branch], b.lag_seconds)
                for state in BRANCH_STATES:
                    branch_state.add_metric([m.name, b.branch, state], 1.0 if b.state == state else 0.0)
        yield from (behind, lag, branch_state, mirror_state, up)

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, ...]:
        return (
            GaugeMetricFamily(
                "lakefs_mirror_branch_behind_seconds",
                "How long the mirror branch has been missing its source head: 0 in sync, else the age of the "
                "source commit not mirrored yet (absent while that commit's time is unknown).",
                labels=["mirror", "branch"],
            ),
            GaugeMetricFamily(
                "lakefs_mirror_branch_lag_seconds",
                "Seconds from the source commit to its promotion at the mirror, for the branch's last promotion.",
                labels=["mirror", "branch"],
            ),
            GaugeMetricFamily(
                "lakefs_mirror_branch_state",
                "1 for the state the mirror branch is in: " + ", ".join(BRANCH_STATES) + " (0 for the others).",
                labels=["mirror", "branch", "state"],
            ),
            GaugeMetricFamily(
                "lakefs_mirror_mirror_state",
                "1 for the lifecycle state the mirror is in: "
                + ", ".join(s.value for s in MirrorState)
                + " (0 for the others).",
                labels=["mirror", "state"],
            ),
            GaugeMetricFamily(
                "lakefs_mirror_status_up",
                "1 when this scrape could read the mirrors' status from the mirrors database, 0 when not.",
            ),
        )
