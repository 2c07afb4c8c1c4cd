"""Assets: one ``branch_heads`` asset per mirror, partitioned by branch name."""

from .branch_heads import (
    ASSET_PREFIX,
    branch_partitions,
    branch_partitions_name,
    build_branch_heads_asset,
    mirror_asset_key,
)

__all__ = [
    "ASSET_PREFIX",
    "branch_partitions",
    "branch_partitions_name",
    "build_branch_heads_asset",
    "mirror_asset_key",
]
