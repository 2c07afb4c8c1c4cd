"""``lakefs-mirror scrub``: bytes damaged at rest in the mirror's MinIO are found by re-reading them and repaired
from the source; the mirror then reads back like the source again through its lakeFS.

The source is written with boto3 through region-a's S3 gateway (single-part objects and one multipart upload),
mirrored into region-c (another MinIO), and then damaged there with boto3 straight against that MinIO: a flipped
byte in a single-part object and in the multipart one (same size, so only reading the bytes shows it), an object
deleted, and a flipped byte in a range file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.replication import metadata_uri, read_metarange
from tests.cli_process import run_cli

from .conftest import Converged
from .outside import RegionClients, assert_mirror_matches
from .users import MiB, blob, multipart_upload, put

pytestmark = pytest.mark.integration


def _flip_byte(s3: Any, physical_address: str, offset: int) -> None:
    where = urlsplit(physical_address)
    bucket, key = where.netloc, where.path.lstrip("/")
    data = bytearray(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    data[offset] ^= 0xFF
    s3.put_object(Bucket=bucket, Key=key, Body=bytes(data))


def test_scrub_finds_bytes_damaged_at_the_mirror_and_repairs_them_from_the_source(
    clients_for: Callable[[str], RegionClients],
    new_repo: Callable[..., str],
    new_mirror: Callable[..., str],
    converge: Callable[..., Converged],
    minio_for: Callable[[str], Any],
    service_for: Callable[[str], ReplicationService],
    config_path: Callable[[str], Path],
    tmp_path: Path,
) -> None:
    src, dst = clients_for("region-a"), clients_for("region-c")
    repo = new_repo()
    for i in range(6):
        put(src.s3, repo, "main", f"tables/part-{i}.csv", blob(f"part-{i}", 4000 + i))
    multipart_upload(src.s3, repo, "main", "big/model.bin", blob("model", 11 * MiB + 3), part_size=5 * MiB)
    src.rest.commit(repo, "main", "written with boto3")
    mirror = new_mirror(repo, "region-c")
    converge(mirror, "region-c")
    config = str(config_path("region-c"))

    clean = run_cli("--config", config, "scrub", mirror, "--json", cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr
    report = json.loads(clean.stdout)
    assert (report["objects_checked"], report["damaged_count"], report["ok"]) == (7, 0, True), report
    assert report["checks"] == {"md5": 6, "multipart_md5": 1}, report  # every object by its recorded checksum

    # Damage at rest in region-c's MinIO: lakeFS's records (size, checksum) stay as they were.
    s3 = minio_for("region-c")
    objects = {o.path: o for o in dst.rest.list_objects(mirror, "main")}
    _flip_byte(s3, objects["tables/part-2.csv"].physical_address, 100)
    _flip_byte(s3, objects["big/model.bin"].physical_address, 6 * MiB)  # in the second part
    gone = urlsplit(objects["tables/part-4.csv"].physical_address)
    s3.delete_object(Bucket=gone.netloc, Key=gone.path.lstrip("/"))
    service = service_for("region-c")
    record = next(service.my_mirrors(name=mirror))
    store = service.destination_store(record.storage_id)
    head = service.client("region-c").get_commit(mirror, dst.rest.head(mirror, "main"))
    [range_id, *_] = read_metarange(store, record.storage_namespace, head.metarange_id)
    _flip_byte(s3, metadata_uri(record.storage_namespace, range_id), 40)

    found = run_cli("--config", config, "scrub", mirror, "--no-repair", "--json", cwd=tmp_path)
    assert found.returncode == 1, found.stderr
    report = json.loads(found.stdout)
    assert report["repaired"] == 0 and report["ok"] is False, report
    # --no-repair stops at the damaged range file: its objects cannot be trusted to be listed right
    assert any(range_id in d for d in report["damaged"]), report

    repaired = run_cli("--config", config, "scrub", mirror, "--json", cwd=tmp_path)
    assert repaired.returncode == 0, repaired.stderr
    report = json.loads(repaired.stdout)
    assert report["damaged_count"] == 4 and report["repaired"] == 4 and report["ok"], report
    damaged = " ".join(report["damaged"])
    for what in ("tables/part-2.csv", "big/model.bin", "tables/part-4.csv", range_id):
        assert what in damaged, (what, report["damaged"])

    again = run_cli("--config", config, "scrub", mirror, "--json", cwd=tmp_path)
    assert json.loads(again.stdout)["damaged_count"] == 0, again.stdout
    assert_mirror_matches(src, repo, dst, mirror)  # every byte read back through both gateways


def test_scrub_refuses_bad_arguments_and_changes_nothing(config_path: Callable[[str], Path], tmp_path: Path) -> None:
    config = str(config_path("region-c"))
    bad_part = run_cli("--config", config, "scrub", "any-mirror", "--part", "5/5", cwd=tmp_path)
    assert bad_part.returncode == 2 and "K/N" in bad_part.stderr, bad_part.stderr
    unknown = run_cli("--config", config, "scrub", "no-such-mirror", cwd=tmp_path)
    assert unknown.returncode == 2 and "no-such-mirror" in unknown.stderr, unknown.stderr
    assert "Traceback" not in bad_part.stderr + unknown.stderr


def test_the_dagster_scrub_job_repairs_a_mirror_and_its_schedule_reads_one_slice_an_hour(
    clients_for: Callable[[str], RegionClients],
    new_repo: Callable[..., str],
    new_mirror: Callable[..., str],
    converge: Callable[..., Converged],
    minio_for: Callable[[str], Any],
    config_path: Callable[[str], Path],
) -> None:
    import datetime as dt

    import dagster as dg

    from lakefs_mirror_dagster.orchestration.resources import ReplicationResource
    from lakefs_mirror_dagster.orchestration.scrub import scrub_job, scrub_schedule

    src, dst = clients_for("region-a"), clients_for("region-c")
    repo = new_repo()
    put(src.s3, repo, "main", "events/day=1/part-0.json", blob("day-1", 2500))
    src.rest.commit(repo, "main", "one object")
    mirror = new_mirror(repo, "region-c")
    converge(mirror, "region-c")
    [obj] = dst.rest.list_objects(mirror, "main")
    _flip_byte(minio_for("region-c"), obj.physical_address, 7)
    resources = {"lakefs_mirror": ReplicationResource(config_path=str(config_path("region-c")))}

    def run(**config: Any) -> Any:
        with dg.instance_for_test() as instance:
            return scrub_job.execute_in_process(
                run_config={"ops": {"scrub_mirrors": {"config": {"mirrors": [mirror], **config}}}},
                resources=resources,
                instance=instance,
                raise_on_error=False,
            )

    reported = run(repair=False)
    assert not reported.success
    failure = next(e for e in reported.all_events if e.is_step_failure)
    assert mirror in failure.step_failure_data.error.message

    repaired = run()
    assert repaired.success
    [materialized] = [e for e in repaired.all_events if e.event_type_value == "STEP_OUTPUT"]
    metadata = materialized.event_specific_data.metadata
    assert (metadata["damaged"].value, metadata["repaired"].value) == (1, 1)
    assert dst.s3.get_object(Bucket=mirror, Key="main/events/day=1/part-0.json")["Body"].read() == blob("day-1", 2500)

    at = dt.datetime(2026, 11, 23, 5, 0, tzinfo=dt.UTC)
    with dg.instance_for_test() as instance:
        request = scrub_schedule(dg.build_schedule_context(instance=instance, scheduled_execution_time=at))
    assert request.run_config["ops"]["scrub_mirrors"]["config"] == {"part": 5, "slices": 24}
    assert scrub_schedule.default_status == dg.DefaultScheduleStatus.STOPPED
