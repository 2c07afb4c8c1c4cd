"""The mirror invariant, checked byte for byte against the source, independently of the engine's own checks.

Every mirror branch and tag points at a commit that (1) the source has, with identical fields, (2) whose
ancestry is complete at the mirror (its log equals the source's), and (3) whose metarange, range files and
objects are at the destination with exactly the source's bytes. Violations are returned as sentences, so a
trial loop can count them and a test can print them all.
"""

from __future__ import annotations

from lakefs_mirror_dagster.graveler.range_id import verify_range_file
from lakefs_mirror_dagster.graveler.ranges import iter_entry_locations, iter_range_refs
from lakefs_mirror_dagster.graveler.sstable import SSTableError
from lakefs_mirror_dagster.lakefs import LakeFSError, LakeFSNotFound
from lakefs_mirror_dagster.replication import metadata_uri
from lakefs_mirror_dagster.storage import ObjectNotFound, StorageError, join_namespace

from .rig import MirrorPair

__all__ = ["MirrorChecker"]


class MirrorChecker:
    """Checks one mirror; object addresses already compared are remembered (objects are immutable by
    address) unless ``full=True``. Range and metarange files are re-read every time."""

    def __init__(self, pair: MirrorPair) -> None:
        self.pair = pair
        self._same_objects: set[str] = set()
        self.checked_refs = 0
        self.checked_objects = 0

    def refs_violations(self, *, full: bool = False) -> list[str]:
        """The invariant for every ref the mirror has right now."""
        p = self.pair
        refs = [("branch", r.id, r.commit_id) for r in p.dst.list_branches(p.mirror)]
        refs += [("tag", r.id, r.commit_id) for r in p.dst.list_tags(p.mirror)]
        violations: list[str] = []
        checked_commits: set[str] = set()
        for kind, name, commit_id in refs:
            self.checked_refs += 1
            if commit_id in checked_commits:
                continue
            checked_commits.add(commit_id)
            violations += [f"{kind} {name} -> {commit_id[:12]}: {v}" for v in self._commit_violations(commit_id, full)]
        if not p.dst.get_repository(p.mirror).read_only:
            violations.append(f"mirror repository {p.mirror} is not read-only")
        return violations

    def converged_violations(self) -> list[str]:
        """After faults end: the same branches and tags at the same commits as the source, all complete."""
        p = self.pair
        violations = self.refs_violations(full=True)
        for what, src_refs, dst_refs in (
            ("branches", p.src.list_branches(p.repo), p.dst.list_branches(p.mirror)),
            ("tags", p.src.list_tags(p.repo), p.dst.list_tags(p.mirror)),
        ):
            want = {r.id: r.commit_id for r in src_refs}
            have = {r.id: r.commit_id for r in dst_refs}
            if want != have:
                violations.append(f"{what} differ: source {sorted(want.items())} mirror {sorted(have.items())}")
        return violations

    # ------------------------------------------------------------------ one commit
    def _commit_violations(self, commit_id: str, full: bool) -> list[str]:
        p = self.pair
        try:
            source = p.src.get_commit(p.repo, commit_id)
        except LakeFSNotFound:
            return ["the source has no such commit"]
        try:
            mirrored = p.dst.get_commit(p.mirror, commit_id)
        except LakeFSNotFound:
            return ["the mirror has no commit record for it"]
        if mirrored != source:
            return [f"commit record differs from the source's: {mirrored} != {source}"]
        try:
            mirror_log = set(p.dst.log_commits(p.mirror, commit_id))
        except LakeFSError as exc:
            return [f"history not readable at the mirror: {exc}"]
        source_log = set(p.src.log_commits(p.repo, commit_id))
        if mirror_log != source_log:
            missing = sorted(c.id[:12] for c in source_log - mirror_log)
            return [f"history differs from the source's (missing at the mirror: {missing[:10]})"]
        if not source.metarange_id:
            return []
        return self._metarange_violations(source.metarange_id, full)

    def _metarange_violations(self, metarange_id: str, full: bool) -> list[str]:
        violations = self._same_file(metarange_id, "metarange")
        if violations:
            return violations
        p = self.pair
        data = p.src_store.read_bytes(metadata_uri(p.src_ns, metarange_id))
        for ref in iter_range_refs(verify_range_file(data, metarange_id)):
            problems = self._same_file(ref.range_id, "range")
            if problems:
                violations += problems
                continue
            range_data = p.src_store.read_bytes(metadata_uri(p.src_ns, ref.range_id))
            entries = iter_entry_locations(verify_range_file(range_data, ref.range_id))
            for key, address, is_full, _size, _etag in entries:
                if is_full or (address in self._same_objects and not full):
                    continue
                problem = self._same_object(key.decode(errors="replace"), address)
                if problem:
                    violations.append(problem)
                else:
                    self._same_objects.add(address)
        return violations

    def _same_file(self, file_id: str, what: str) -> list[str]:
        """A metadata file at the destination: present, the source's bytes, and hashing to its ID."""
        p = self.pair
        try:
            dst_bytes = p.dst_store.read_bytes(metadata_uri(p.dst_ns, file_id))
        except ObjectNotFound:
            return [f"{what} file _lakefs/{file_id} missing at the destination"]
        if dst_bytes != p.src_store.read_bytes(metadata_uri(p.src_ns, file_id)):
            return [f"{what} file _lakefs/{file_id} at the destination differs from the source's"]
        try:
            verify_range_file(dst_bytes, file_id)
        except SSTableError as exc:
            return [f"{what} file _lakefs/{file_id} does not hash to its ID: {exc}"]
        return []

    def _same_object(self, key: str, address: str) -> str | None:
        p = self.pair
        self.checked_objects += 1
        try:
            dst_bytes = p.dst_store.read_bytes(join_namespace(p.dst_ns, address))
        except ObjectNotFound:
            return f"object {key} ({address}) missing at the destination"
        except StorageError as exc:
            return f"object {key} ({address}) unreadable at the destination: {exc}"
        if dst_bytes != p.src_store.read_bytes(join_namespace(p.src_ns, address)):
            return f"object {key} ({address}) at the destination differs from the source's bytes"
        return None
