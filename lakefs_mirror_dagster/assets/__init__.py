"""Assets: per mirror, ``branch_heads`` (partitioned by branch name) and ``tags``."""

from .branch_heads import (
    ASSET_PREFIX,
    branch_partitions,
    branch_partitions_name,
    build_branch_heads_asset,
    mirror_asset_key,
)
from .tags import build_tags_asset, list_tags, tags_asset_key, tags_digest

__all__ = [
    "ASSET_PREFIX",
    "branch_partitions",
    "branch_partitions_name",
    "build_branch_heads_asset",
    "build_tags_asset",
    "list_tags",
    "mirror_asset_key",
    "tags_asset_key",
    "tags_digest",
]
