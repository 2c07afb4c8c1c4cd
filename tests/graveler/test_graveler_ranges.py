"""Range IDs, the fast location path, dump files and the `sst cat` rendering."""

from __future__ import annotations

import json
import random

import pytest

from lakefs_mirror_dagster.graveler import (
    RangeIdMismatchError,
    SSTable,
    SSTableError,
    compute_range_id,
    entry_identity,
    format_sst,
    iter_branches,
    iter_commits,
    iter_entries,
    iter_entry_locations,
    iter_range_refs,
    iter_tags,
    verify_range_file,
)
from tests.shared_fixtures import SSTABLE_FIXTURES

from .sstable_writer import (
    WriterOptions,
    _pb_len,
    _pb_varint,
    encode_entry,
    fake_entry_records,
    write_lakefs_file,
)

FIXTURES = SSTABLE_FIXTURES
RANGE_ID = "a83af763ba098c15369d9d6d723731eb9ce18b8dfac4f88c6f1287e772393d0e"


def test_range_fixture_id_is_the_one_the_metarange_references() -> None:
    range_bytes = (FIXTURES / "range.sst").read_bytes()
    meta = SSTable.from_bytes((FIXTURES / "metarange.sst").read_bytes())
    referenced = {ref.range_id for ref in iter_range_refs(meta)}
    assert compute_range_id(SSTable.from_bytes(range_bytes)) in referenced
    assert verify_range_file(range_bytes, RANGE_ID).user_properties["type"] == "ranges"


def test_verify_range_file_mismatch_is_a_clear_error() -> None:
    data = (FIXTURES / "range.sst").read_bytes()
    with pytest.raises(RangeIdMismatchError, match=r"hashes to a83af763.*not to the expected ID 0000"):
        verify_range_file(data, "0" * 64)


def test_writer_ids_agree_with_reader_including_dump_metadata() -> None:
    records = fake_entry_records(500)
    plain = write_lakefs_file(records)
    assert compute_range_id(SSTable.from_bytes(plain.data)) == plain.range_id
    dump = write_lakefs_file(records, metadata={"entity": "x", "schema_name": "s", "schema_definition": "{}"})
    assert dump.range_id != plain.range_id  # caller metadata is part of the ID
    assert compute_range_id(SSTable.from_bytes(dump.data)) == dump.range_id


def _mixed_records(n: int) -> list[tuple[bytes, bytes, bytes]]:
    """Entries exercising every branch of the fast path: all address types, long fields, odd sizes."""
    rnd = random.Random(3)
    out = []
    for i in range(n):
        kind = i % 5
        address = {
            0: f"data/g{i:08x}/{'x' * (i % 200)}",
            1: f"s3://bucket/imported/{i}",
            2: f"{rnd.getrandbits(128):032x}",  # old relative UUID, BY_PREFIX_DEPRECATED
            3: f"gs://other/{i}",  # full by prefix
            4: "",
        }[kind]
        data = encode_entry(
            address,
            rnd.choice([0, 1, 127, 128, 1 << 28, 1 << 35, (1 << 62) + 5, -3]),
            e_tag="e" * (i % 150),
            last_modified=(rnd.randint(0, 1 << 40), rnd.randint(0, 999_999_999)),
            metadata={f"k{j}": "v" * (j * 40) for j in range(i % 4)},
            address_type={0: 1, 1: 2, 2: 0, 3: 0, 4: 1}[kind],
            content_type="text/plain" if i % 2 else "",
        )
        if i % 7 == 0:
            data += _pb_varint(50, 1) + _pb_len(51, b"future field")
        if i % 11 == 0:
            data = _pb_varint(6, 1) + data  # out of canonical order; later value still wins
        key = f"p/{i:06d}/".encode() + bytes([0xC3, 0xA9]) * (i % 3)
        out.append((key, bytes(32), data))
    return out


@pytest.mark.parametrize("compress", [True, False])
def test_fast_path_agrees_with_full_decoder(compress: bool) -> None:
    lf = write_lakefs_file(_mixed_records(3000), options=WriterOptions(compress=compress, index_block_size=700))
    sst = SSTable.from_bytes(lf.data)
    assert sst.index_type == 2
    full = [(k, e.address, e.is_full_address, e.size, e.e_tag) for k, _i, e in iter_entries(sst)]
    fast = list(iter_entry_locations(sst))
    assert len(fast) == 3000
    assert fast == full
    kinds = {(addr[:5], is_full) for _k, addr, is_full, _s, _e in fast}
    assert len({etag for *_rest, etag in fast}) > 100  # the ETags decoded, not skipped
    assert ("s3://", True) in kinds and ("gs://", True) in kinds and ("data/", False) in kinds


def test_fast_path_on_lakefs_fixtures() -> None:
    for name in ("range.sst", "ok1.sst"):
        sst = SSTable.from_bytes((FIXTURES / name).read_bytes())
        assert list(iter_entry_locations(sst)) == [
            (k, e.address, e.is_full_address, e.size, e.e_tag) for k, _i, e in iter_entries(sst)
        ]


def test_fast_path_reports_corrupt_protobuf() -> None:
    bad = [(b"a", bytes(32), encode_entry("data/x", 5) + b"\x0a\x7f")]  # address length past the end
    sst = SSTable.from_bytes(write_lakefs_file(bad).data)
    with pytest.raises(SSTableError, match="overruns"):
        list(iter_entry_locations(sst))


def test_wrong_file_kind_is_refused() -> None:
    meta = SSTable.from_bytes((FIXTURES / "metarange.sst").read_bytes())
    with pytest.raises(SSTableError, match="expected a file of type 'ranges', got 'metaranges'"):
        list(iter_entries(meta))
    rng = SSTable.from_bytes((FIXTURES / "range.sst").read_bytes())
    with pytest.raises(SSTableError, match="commit dump"):
        list(iter_commits(rng))


def _commit_record(cid: str, parents: list[str]) -> tuple[bytes, bytes, bytes]:
    data = (
        _pb_len(1, cid.encode())
        + _pb_len(2, b"Committer")
        + _pb_len(3, b"message")
        + _pb_len(4, _pb_varint(1, 1_000_000_000))
        + _pb_len(5, b"metarangeId")
        + _pb_len(6, _pb_len(1, b"key") + _pb_len(2, b"value"))
        + b"".join(_pb_len(7, p.encode()) for p in parents)
        + _pb_varint(9, 2)
    )
    return cid.encode(), cid.encode(), data


def test_dump_files_decode() -> None:
    cid = "0c5f9d6fde638a6aa82840caf2485bdbe6ad0fc3f220ea88884df9ed99d7cf19"
    commits = write_lakefs_file([_commit_record(cid, ["parent1", "parent2"])], metadata={"entity": "commit"})
    [(key, identity, commit)] = list(iter_commits(SSTable.from_bytes(commits.data)))
    assert key == identity == cid.encode() and commit.computed_id() == cid and commit.generation == 2
    branches = write_lakefs_file(
        [(b"main", cid.encode(), _pb_len(1, b"main") + _pb_len(2, cid.encode()))], metadata={"entity": "branch"}
    )
    assert [b.commit_id for _k, _i, b in iter_branches(SSTable.from_bytes(branches.data))] == [cid]
    tags = write_lakefs_file(
        [(b"v1", cid.encode(), _pb_len(1, b"v1") + _pb_len(2, cid.encode()))], metadata={"entity": "tag"}
    )
    assert [(t.id, t.commit_id) for _k, _i, t in iter_tags(SSTable.from_bytes(tags.data))] == [("v1", cid)]
    rendered = json.loads(format_sst(commits.data, as_json=True))
    assert rendered["records"][0]["id_matches_content"] is True
    assert rendered["range_id"] == commits.range_id


def test_format_sst_json_and_text() -> None:
    data = (FIXTURES / "range.sst").read_bytes()
    info = json.loads(format_sst(data, as_json=True))
    assert info["type"] == "ranges" and info["range_id"] == RANGE_ID
    assert [r["key"] for r in info["records"]] == ["a/b/c/no", "a/b/c/yes"]
    assert {r["identity_formula"] for r in info["records"]} == {"current"}
    assert info["records"][0]["address_type"] == "RELATIVE"
    assert info["properties"]["rocksdb.num.entries"] == 2
    text = format_sst(data, as_json=False)
    assert RANGE_ID in text and "a/b/c/yes" in text and "b0c968736d8f42a2b1c6284835f08226" in text
    old = json.loads(format_sst((FIXTURES / "ok1.sst").read_bytes(), as_json=True))
    assert {r["identity_formula"] for r in old["records"]} == {"pre-2021"}
    assert old["user_properties"]["min_key"] == "+@\\xb3l\\xa8"  # non-UTF-8 bytes stay visible
    meta = json.loads(format_sst((FIXTURES / "metarange.sst").read_bytes(), as_json=True))
    assert meta["records"][0]["range_id"] == RANGE_ID


def test_entry_identity_of_written_entries() -> None:
    data = encode_entry("data/a", 42, e_tag="t", metadata={"m": "1"}, address_type=1, content_type="c")
    ident = entry_identity(42, "t", {"m": "1"}, "c")
    lf = write_lakefs_file([(b"k", ident, data)])
    [(_k, identity, e)] = list(iter_entries(SSTable.from_bytes(lf.data)))
    assert identity == e.identity() == ident
