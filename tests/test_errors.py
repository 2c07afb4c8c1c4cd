"""One error root: every exception the package raises on purpose is a ``LakeFSMirrorError``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import lakefs_mirror_dagster
from lakefs_mirror_dagster.errors import LakeFSMirrorError

# Wire-level signals that are caught and translated where they are raised; never seen by a caller.
_INTERNAL = {
    "lakefs_mirror_dagster.storage.native.ErrorResponse",
    "lakefs_mirror_dagster.storage.plain_http.HttpStatusError",  # a presigned request's answer, read where sent
    "lakefs_mirror_dagster.storage.s3_native.UnlistableKeyError",  # obstore's listing gives way to boto3's
    "lakefs_mirror_dagster.mirrors.races.LostRace",  # a retry signal inside the mirrors store
    # DynamoDB's answer to a failed condition, decided on by the DynamoDB store's parts that made the write
    "lakefs_mirror_dagster.mirrors.dynamodb.table.ConditionFailed",
    "lakefs_mirror_dagster.mirrors.dynamodb.table.Cancelled",
}


def _package_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    prefix = lakefs_mirror_dagster.__name__ + "."
    for info in pkgutil.walk_packages(lakefs_mirror_dagster.__path__, prefix):
        if info.name.endswith(".__main__"):
            continue  # importing it runs the program (``python -m lakefs_mirror_dagster.cli``)
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                found[f"{module.__name__}.{name}"] = obj
    return found


def test_every_public_exception_derives_from_the_root() -> None:
    exceptions = _package_exceptions()
    public = {name: cls for name, cls in exceptions.items() if not name.rpartition(".")[2].startswith("_")}
    assert "lakefs_mirror_dagster.lakefs.errors.LakeFSError" in public  # the walk reached the rooms
    strays = sorted(name for name, cls in public.items() if not issubclass(cls, LakeFSMirrorError))
    assert strays == sorted(_INTERNAL)


def test_old_bases_still_catch_and_old_import_paths_still_work() -> None:
    from lakefs_mirror_dagster.config import ConfigError
    from lakefs_mirror_dagster.graveler.protowire import ProtoError
    from lakefs_mirror_dagster.graveler.range_id import RangeIdMismatchError
    from lakefs_mirror_dagster.graveler.records import RecordError
    from lakefs_mirror_dagster.graveler.sstable import SSTableError
    from lakefs_mirror_dagster.graveler.varint import VarintError
    from lakefs_mirror_dagster.lakefs import LakeFSError
    from lakefs_mirror_dagster.mirrors import MirrorNotFound

    for cls in (ConfigError, ProtoError, RecordError, SSTableError, VarintError):
        assert issubclass(cls, ValueError)
    assert issubclass(RangeIdMismatchError, SSTableError)
    assert issubclass(LakeFSError, RuntimeError)
    assert issubclass(MirrorNotFound, LookupError)
