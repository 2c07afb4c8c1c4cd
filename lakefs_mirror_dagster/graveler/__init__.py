"""lakeFS's own formats, read in Python: range/metarange sstables, their records, and lakeFS IDs.

The loops over every record of a range also exist in C (``_native.c``, compiled by pip where a C compiler is
found); the Python ones are their reference and fallback. No I/O: every function takes bytes (or an
:class:`SSTable` parsed from bytes). See
``docs``/design notes §1.5 and §3 for the formats.
"""

from .addresses import KNOWN_SCHEMES, AddressType, address_is_full
from .errors import GravelerError, ProtoError, RangeIdMismatchError, RecordError, SSTableError, VarintError
from .ident import IdentityWriter, commit_id, entry_identity, entry_identity_legacy, parents_identity
from .metarange import Metarange, decode_metarange
from .range_id import (
    VerifiedRange,
    compute_range_id,
    range_id_of_bytes,
    verified_blocks,
    verified_records,
    verify_range,
    verify_range_file,
)
from .ranges import (
    FILE_TYPE_METARANGES,
    FILE_TYPE_RANGES,
    EntryLocation,
    changed_entries,
    entry_location,
    file_type,
    iter_branches,
    iter_commits,
    iter_entries,
    iter_entry_locations,
    iter_range_refs,
    iter_tags,
    object_blocks,
    object_range,
)
from .records import (
    BranchData,
    CommitData,
    Entry,
    RangeRef,
    TagData,
    decode_branch_data,
    decode_commit_data,
    decode_entry,
    decode_range_ref,
    decode_tag_data,
    encode_value,
    split_value,
)
from .render import describe_sst, format_sst
from .sstable import SSTable
from .varint import decode_uvarint, decode_varint, encode_uvarint, encode_varint

__all__ = [
    "FILE_TYPE_METARANGES",
    "FILE_TYPE_RANGES",
    "KNOWN_SCHEMES",
    "AddressType",
    "BranchData",
    "CommitData",
    "Entry",
    "EntryLocation",
    "GravelerError",
    "IdentityWriter",
    "Metarange",
    "ProtoError",
    "RangeIdMismatchError",
    "RangeRef",
    "RecordError",
    "SSTable",
    "SSTableError",
    "TagData",
    "VarintError",
    "VerifiedRange",
    "address_is_full",
    "changed_entries",
    "commit_id",
    "compute_range_id",
    "decode_branch_data",
    "decode_commit_data",
    "decode_entry",
    "decode_metarange",
    "decode_range_ref",
    "decode_tag_data",
    "decode_uvarint",
    "decode_varint",
    "describe_sst",
    "encode_uvarint",
    "encode_value",
    "encode_varint",
    "entry_identity",
    "entry_identity_legacy",
    "entry_location",
    "file_type",
    "format_sst",
    "iter_branches",
    "iter_commits",
    "iter_entries",
    "iter_entry_locations",
    "iter_range_refs",
    "iter_tags",
    "object_blocks",
    "object_range",
    "parents_identity",
    "range_id_of_bytes",
    "split_value",
    "verified_blocks",
    "verified_records",
    "verify_range",
    "verify_range_file",
]
