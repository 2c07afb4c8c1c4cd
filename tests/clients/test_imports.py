"""A prefix imported through lakeFS's import API mirrors as docs/design.md promises.

Imported objects stay where they were written (here: put straight into region-a's MinIO bucket with boto3,
outside the repository's namespace) and are committed with their FULL addresses. docs/design.md: "Imported
(full-address) objects live outside the repository's namespace, so they are not copied. They are listed in the
result, and ``transfer.strict_full_addresses: true`` refuses to promote them."

So what is asserted for them is what is promised: the branch mirrors commit for commit, the sync result lists
them, and the mirror's entries carry the very same full address, size, checksum (ETag), Content-Type and
metadata (REST stat and gateway HEAD, which reads only the entry). Their bytes are NOT compared through the
mirror's gateway: neither mirror region can reach them. region-b's lakeFS runs on the local blockstore and
cannot read ``s3://`` addresses at all; region-c's lakeFS has credentials only for its own MinIO (minio-c),
which has no ``region-a`` bucket. Reading them there fails by design, not by a mirroring bug. Their bytes are
checked through the source's gateway instead, and every object written through the gateway (copied, relative
address) is compared byte for byte as everywhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .conftest import Converged
from .outside import RegionClients, assert_mirror_matches
from .users import blob, put

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("dst_region", ["region-b", "region-c"])
def test_imported_prefix_mirrors_with_its_full_addresses(
    dst_region: str,
    clients_for: Callable[[str], RegionClients],
    minio_for: Callable[[str], Any],
    new_repo: Callable[..., str],
    new_mirror: Callable[..., str],
    converge: Callable[..., Converged],
) -> None:
    src, dst = clients_for("region-a"), clients_for(dst_region)
    repo = new_repo("region-a")
    bucket = src.region.namespace_root.removeprefix("s3://").split("/", 1)[0]
    minio = minio_for("region-a")
    put(src.s3, repo, "main", "own/written-through-lakefs.csv", blob("own", 300), content_type="text/csv")
    src.rest.commit(repo, "main", "own data")

    external = {f"external-{repo}/batch-1/part-{i}.csv": blob(f"ext-{i}", 200 + i) for i in range(4)}
    for key, data in external.items():
        minio.put_object(Bucket=bucket, Key=key, Body=data, ContentType="text/csv")
    imported = src.rest.import_prefix(repo, "main", f"s3://{bucket}/external-{repo}/batch-1/", "imported/", "import 1")
    assert src.rest.head(repo, "main") == imported
    for key, data in external.items():  # lakeFS itself reads them through the source's gateway
        path = "imported/" + key.rsplit("/", 1)[1]
        assert src.s3.get_object(Bucket=repo, Key=f"main/{path}")["Body"].read() == data
    src.rest.create_tag(repo, "imported-v1", imported)
    name = new_mirror(repo, dst_region)

    outcome = converge(name, dst_region)
    main = outcome.ref("branch", "main")
    assert main.stats.full_address_objects == len(external)
    assert all(a.startswith(f"s3://{bucket}/external-{repo}/") for a in main.stats.full_address_examples)
    report = assert_mirror_matches(src, repo, dst, name, full_address_readable=False)
    assert report.full_address_paths == {"imported/" + k.rsplit("/", 1)[1] for k in external}
    assert report.objects_read == 1  # the one object written through the gateway, byte for byte

    # Round 2: a second import beside new gateway writes, incrementally.
    more = {f"external-{repo}/batch-2/extra.bin": blob("extra", 1234)}
    for key, data in more.items():
        minio.put_object(Bucket=bucket, Key=key, Body=data)
    src.rest.import_prefix(repo, "main", f"s3://{bucket}/external-{repo}/batch-2/", "imported-2/", "import 2")
    put(src.s3, repo, "main", "own/second.json", b'{"round": 2}', content_type="application/json")
    src.rest.commit(repo, "main", "own data, round 2", {"round": "2"})

    converge(name, dst_region)
    report = assert_mirror_matches(src, repo, dst, name, full_address_readable=False)
    assert "imported-2/extra.bin" in report.full_address_paths
