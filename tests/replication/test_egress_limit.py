"""transfer.max_bytes_per_second against real servers: a sync of region-a's repository into region-c (two MinIO
servers, so every object is streamed through this process) reads every object byte through the process's one
token bucket, and the mirror is whole. Only the limiter's own count is asserted, never how long the sync took
(its rate is shown on an injected clock in tests/storage/test_bandwidth.py and measured by benchmarks/wan.py)."""

from __future__ import annotations

import yaml

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.storage import process_limiter

from .conftest import assert_mirror_equals_source, content

RATE = "4Mbit"  # 500,000 bytes per second: 24 x 32 KiB take about 1.5 s beyond the burst


def test_copies_go_through_the_process_limiter(lakefs_env, config_path, service_for, unique_name, tmp_path) -> None:
    raw = yaml.safe_load(config_path("region-c").read_text())
    raw.setdefault("transfer", {})["max_bytes_per_second"] = RATE
    limited = tmp_path / "replication-region-c.yaml"
    limited.write_text(yaml.safe_dump(raw))
    limited.chmod(0o600)
    svc_a, svc_c = service_for("region-a"), ReplicationService(load_config(limited, env={}))
    try:
        src, dst = svc_a.client("region-a"), svc_c.client("region-c")
        repo, name = unique_name("egress"), unique_name("mirror")
        src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
        payload = {f"data/{i:03d}.bin": content(f"egress-{i}", 32 * 1024) for i in range(24)}
        for key, data in payload.items():
            src.upload_object(repo, "main", key, data)
        src.commit(repo, "main", "24 objects")
        svc_a.create_mirror(
            source_repository=repo,
            name=name,
            region="region-c",
            storage_namespace=lakefs_env.region("region-c").namespace_for(name),
        )
        bucket = process_limiter(svc_c.engine_settings().max_bytes_per_second)
        assert bucket is not None and bucket.rate == 500_000
        before = bucket.taken
        [result] = svc_c.sync(name=name)
        assert result.ok, result.to_json()
        main = next(r for r in result.refs if r.name == "main")
        assert main.stats.bytes_copied == sum(len(d) for d in payload.values())
        assert bucket.taken - before == main.stats.bytes_copied  # every copied byte was read through the bucket
        assert_mirror_equals_source(src, repo, dst, name)
    finally:
        svc_c.close()
