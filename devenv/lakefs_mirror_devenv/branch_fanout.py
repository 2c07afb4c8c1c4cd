"""Many source branches, each with a commit of its own: the workload of the many-branches tests and benchmarks.

Branches are created with lakeFS's REST API (``LakeFSClient``) and each gets one object written with boto3
through lakeFS's S3 gateway, then a commit, so every branch has a distinct head the mirror must reach.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lakefs_mirror_dagster.lakefs import LakeFSClient

__all__ = ["fan_out_branches"]


def fan_out_branches(
    client: LakeFSClient, s3_gateway: Any, repo: str, names: list[str], *, base: str = "main", workers: int = 4
) -> dict[str, str]:
    """Branch each of ``names`` from ``base``, put one small object on it, commit; returns name -> new head."""

    def one(name: str) -> tuple[str, str]:
        client.create_branch(repo, name, base)
        s3_gateway.put_object(Bucket=repo, Key=f"{name}/branches/{name}.json", Body=f'{{"branch": "{name}"}}'.encode())
        return name, client.commit(repo, name, f"one object on {name}").id

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(pool.map(one, names))
