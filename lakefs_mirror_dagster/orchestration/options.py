"""Where the mirror definitions go in a user's code location: asset keys, group, resource keys, names.

The defaults name everything as the package's own code location always has (``lakefs_mirror/<mirror>/…``, the
``replication`` resource), so an existing deployment keeps its event-log history. Another key prefix also prefixes
every sensor, job and partition name, so two regions' mirrors can live in one code location.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dagster as dg

if TYPE_CHECKING:
    from .mirroring.spark import SparkValidatorResource
    from .resources import ReplicationResource

__all__ = ["DEFAULT_OPTIONS", "DEFAULT_PREFIX", "MirrorDefsOptions"]

DEFAULT_PREFIX = "lakefs_mirror"


@dataclass(frozen=True)
class MirrorDefsOptions:
    """How the mirror definitions are named and which resources they use."""

    #: Asset keys are ``[*key_prefix, <mirror>, "branch_heads" | "tags" | "source"]``.
    key_prefix: tuple[str, ...] = (DEFAULT_PREFIX,)
    group_name: str = "lakefs_mirrors"
    #: The ``ReplicationResource`` the assets, checks, sensors and jobs ask for.
    resource_key: str = "lakefs_mirror"
    #: The ``SparkValidatorResource`` the mirror assets ask for.
    spark_resource_key: str = "lakefs_mirror_spark"

    def __post_init__(self) -> None:
        if not self.key_prefix or not all(self.key_prefix):
            raise ValueError("key_prefix needs at least one non-empty part")
        for name, value in (("resource_key", self.resource_key), ("spark_resource_key", self.spark_resource_key)):
            if not value.isidentifier():
                raise ValueError(f"{name} {value!r} is not a Python identifier (Dagster resource keys must be)")
        if self.resource_key == self.spark_resource_key:
            raise ValueError(f"resource_key and spark_resource_key are both {self.resource_key!r}")

    @property
    def is_default(self) -> bool:
        return self.key_prefix == (DEFAULT_PREFIX,)

    def name(self, suffix: str) -> str:
        """A sensor, job or schedule name: ``lakefs_mirror_<suffix>`` by default, else ``<prefix>_<suffix>``."""
        return "_".join(_identifier(p) for p in self.key_prefix) + "_" + suffix

    def job_name(self, base: str) -> str:
        """The name of a job or schedule of the region (``scrub_job``…): as is by default, else prefixed."""
        return base if self.is_default else self.name(base)

    def branches_job_name(self, mirror: str) -> str:
        """The job the commit sensor launches a mirror's branch runs in (in-process: one step per run)."""
        return self.name(f"{_identifier(mirror)}_branches")

    def tags_job_name(self, mirror: str) -> str:
        return self.name(f"{_identifier(mirror)}_tags")

    def branch_heads_key(self, mirror: str) -> dg.AssetKey:
        return dg.AssetKey([*self.key_prefix, mirror, "branch_heads"])

    def tags_key(self, mirror: str) -> dg.AssetKey:
        return dg.AssetKey([*self.key_prefix, mirror, "tags"])

    def source_key(self, mirror: str) -> dg.AssetKey:
        """The source repository, an external asset upstream of the mirror's assets."""
        return dg.AssetKey([*self.key_prefix, mirror, "source"])

    def partitions_name(self, mirror: str) -> str:
        """The mirror's branch partitions (instance-wide in Dagster): ``<mirror>_branches`` by default."""
        return f"{mirror}_branches" if self.is_default else self.name(f"{_identifier(mirror)}_branches")

    def replication(self, context: Any) -> ReplicationResource:
        """The replication resource from a run's, check's or sensor's ``context.resources``."""
        return getattr(context.resources, self.resource_key)

    def spark(self, context: Any) -> SparkValidatorResource:
        return getattr(context.resources, self.spark_resource_key)


def _identifier(part: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in part)


DEFAULT_OPTIONS = MirrorDefsOptions()
