"""The WAN suite's own environment: two regions on two MinIO servers, the destination reaching its source only
through Toxiproxy over an 80 ms link (``devenv up --link``), with ``source_stores`` so that both the source
lakeFS and the source store are behind the link. Its syncs run from the fault suite's rig (``tests/faults``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lakefs_mirror_devenv import RegionSpec, environment_up, parse_link_spec, stop_environment

from tests.faults.rig import FaultRig

from .link import DST, SRC, LinkFaults

LINK = f"{SRC}->{DST}:rtt=80ms,jitter=5ms,rate=200Mbit,source_stores=on"


@pytest.fixture(scope="package")
def wan_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultRig]:
    state_dir = tmp_path_factory.mktemp("wan-env")
    env = environment_up(
        state_dir,
        (RegionSpec(SRC, f"s3:{SRC}-minio"), RegionSpec(DST, f"s3:{DST}-minio")),
        links=(parse_link_spec(LINK),),
    )
    rig = FaultRig(env, src=SRC, dst=DST)
    try:
        yield rig
    finally:
        rig.close()
        stop_environment(env)


@pytest.fixture
def link(wan_rig: FaultRig) -> Iterator[LinkFaults]:
    """The link's toxics, every fault removed and the link's own shape restored after the test."""
    faults = LinkFaults(wan_rig.env, parse_link_spec(LINK))
    try:
        yield faults
    finally:
        faults.heal()
        faults.reshape(parse_link_spec(LINK))
