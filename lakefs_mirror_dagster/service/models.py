"""Request and response bodies of the mirror API (they also make up the published OpenAPI document)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "REPOSITORY_NAME",
    "STORAGE_NAMESPACE",
    "ErrorBody",
    "InFlightBody",
    "MirrorBody",
    "MirrorBranchBody",
    "MirrorCreation",
    "MirrorDeletion",
    "MirrorList",
    "Pagination",
    "StorageBody",
    "StorageList",
]

# lakeFS's own repository name rule, and the namespace schemes lakeFS accepts.
REPOSITORY_NAME = r"^[a-z0-9][a-z0-9-]{2,62}$"
STORAGE_NAMESPACE = r"^(s3|gs|https?|mem|local|transient)://.+$"


class MirrorCreation(BaseModel):
    """Body of ``POST .../mirrors``, as in the reference's curl example (``storage_id`` is optional)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    name: str = Field(pattern=REPOSITORY_NAME, description="Name of the read-only mirror repository")
    region: str = Field(min_length=1, max_length=128, description="Destination region")
    storage_namespace: str = Field(
        pattern=STORAGE_NAMESPACE, max_length=1024, description="Mirror storage namespace at the destination"
    )
    storage_id: str = Field(default="", max_length=128, description="Destination store id (multi-store)")


class InFlightBody(BaseModel):
    """A sync advancing the branch right now, as its engine last wrote it (counters named as in its progress)."""

    state: str = Field(description="in_flight, or stale: not updated for 60 s (its process died or hangs)")
    source_commit_id: str = Field(description="The source commit the branch is being advanced to")
    started_at: str
    updated_at: str = Field(description="When the syncing process last wrote this (about every 5 s)")
    updated_seconds_ago: float
    ranges_planned: int
    ranges_done: int
    objects_planned: int
    objects_done: int
    bytes_done: int = Field(description="Bytes copied (objects already at the mirror cost none)")
    elapsed_seconds: float
    bytes_per_second: float
    eta_seconds: float | None = Field(description="Time left at the rate so far; null before any rate, or stale")


class MirrorBranchBody(BaseModel):
    branch: str
    mirrored_commit_id: str | None
    source_commit_id: str | None
    lag_seconds: float | None
    promoted_at: str | None
    in_flight: InFlightBody | None = Field(description="The sync advancing this branch now; null when idle")


class MirrorBody(BaseModel):
    id: str
    organization_id: str
    source_region: str
    source_repository: str
    name: str
    region: str
    storage_namespace: str
    storage_id: str
    state: str = Field(description="pending, creating, active, deleting, deleted or failed")
    message: str
    created_at: str
    updated_at: str
    generation: int
    branches: list[MirrorBranchBody]
    log_order: str = Field(
        description="exact: same-second commits are listed in the source's order (refstore_database is set); "
        "otherwise why their order may differ (docs/log-order.md)"
    )


class Pagination(BaseModel):
    """lakeFS's pagination object: pass ``next_offset`` as ``after`` while ``has_more``."""

    has_more: bool
    next_offset: str
    results: int
    max_per_page: int


class MirrorList(BaseModel):
    pagination: Pagination
    results: list[MirrorBody]


class StorageBody(BaseModel):
    id: str = Field(description='Store id ("" for a single blockstore)')
    type: str = Field(description="s3, gs, azure or local")
    description: str
    backward_compatible: bool = Field(description="Repositories without a storage id live on this store")
    namespace_example: str = Field(description="The shape of a storage namespace on this store")


class StorageList(BaseModel):
    results: list[StorageBody]


class MirrorDeletion(BaseModel):
    """What a delete started: the mirror goes to ``deleting`` and its region's mirrors manager then deletes the
    mirror's repository, named here so the caller sees what is about to go."""

    message: str
    mirror_id: str
    state: str = Field(description="deleting (or deleted, when it already was)")
    repository: str = Field(description="The mirror repository lakeFS deletes (its objects stay in the namespace)")
    region: str = Field(description="The region whose lakeFS holds that repository")


class ErrorBody(BaseModel):
    message: str
