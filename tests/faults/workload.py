"""Seeded random changes to a source repository, so every sync in a fault trial has work to do.

Each step commits at least once (new, overwritten and deleted objects) and sometimes also creates or deletes
a branch, creates, moves or deletes a tag, or merges a branch into ``main`` (a merge commit with two parents).
"""

from __future__ import annotations

import contextlib
import hashlib
import random

from lakefs_mirror_dagster.lakefs import LakeFSClient, LakeFSError, LakeFSNotFound

__all__ = ["SourceWorkload", "content"]

_MAX_BRANCHES = 5
_MAX_TAGS = 4


def content(key: str, size: int, salt: int = 0) -> bytes:
    """Deterministic bytes for a key (``salt`` makes an overwrite differ from the previous version)."""
    seed = hashlib.sha256(f"{key}#{salt}".encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


class SourceWorkload:
    """Random but reproducible (``seed``) edits of one repository through its lakeFS API."""

    def __init__(self, client: LakeFSClient, repo: str, seed: int) -> None:
        self.client, self.repo = client, repo
        self.rng = random.Random(seed)
        self.branches = ["main"]
        self.tags: list[str] = []
        self.keys: dict[str, list[str]] = {"main": []}
        self.version = 0
        self.steps: list[str] = []

    def seed_main(self, objects: int = 12) -> None:
        self._commit("main", new=objects, overwrite=0, delete=0)

    def step(self) -> str:
        """One round of changes; returns what was done (for failure messages)."""
        rng, done = self.rng, []
        roll = rng.random()
        if roll < 0.15 and len(self.branches) < _MAX_BRANCHES:
            base = rng.choice(self.branches)
            name = f"b{self.version}-{rng.randrange(1000)}"
            self.client.create_branch(self.repo, name, base)
            self.branches.append(name)
            self.keys[name] = list(self.keys[base])
            done.append(f"branch {name} from {base}")
        elif roll < 0.22 and len(self.branches) > 2:
            name = rng.choice(self.branches[1:])
            self.client.delete_branch(self.repo, name)
            self.branches.remove(name)
            del self.keys[name]
            done.append(f"deleted branch {name}")
        elif roll < 0.32 and len(self.branches) > 1:
            done.append(self._merge(rng.choice(self.branches[1:])))
        branch = rng.choice(self.branches)
        done.append(self._commit(branch, new=rng.randint(1, 4), overwrite=rng.randint(0, 2), delete=rng.randint(0, 1)))
        roll = rng.random()
        if roll < 0.2 and len(self.tags) < _MAX_TAGS:
            tag = f"v{self.version}"
            self.client.create_tag(self.repo, tag, rng.choice(self.branches))
            self.tags.append(tag)
            done.append(f"tag {tag}")
        elif roll < 0.3 and self.tags:
            tag = rng.choice(self.tags)
            self.client.delete_tag(self.repo, tag)
            if rng.random() < 0.5:  # re-created elsewhere: the mirror must move it, not keep the old one
                self.client.create_tag(self.repo, tag, rng.choice(self.branches))
                done.append(f"moved tag {tag}")
            else:
                self.tags.remove(tag)
                done.append(f"deleted tag {tag}")
        self.steps.append("; ".join(done))
        return self.steps[-1]

    def _commit(self, branch: str, *, new: int, overwrite: int, delete: int) -> str:
        rng, keys = self.rng, self.keys[branch]
        earlier = list(keys)  # deletions pick only from these, so this commit's new objects always remain
        self.version += 1
        for i in range(new):
            key = f"data/{branch}/v{self.version}-{i}.bin"
            self.client.upload_object(self.repo, branch, key, content(key, rng.randint(50, 4000)))
            keys.append(key)
        for key in rng.sample(keys, min(overwrite, len(keys))):
            self.client.upload_object(self.repo, branch, key, content(key, rng.randint(50, 4000), self.version))
        for key in rng.sample(earlier, min(delete, max(0, len(earlier) - 1))):
            with contextlib.suppress(LakeFSNotFound):
                self.client.delete_object(self.repo, branch, key)
            keys.remove(key)
        commit = self.client.commit(self.repo, branch, f"step {self.version} on {branch}")
        return f"commit {commit.id[:12]} on {branch} (+{new} ~{overwrite} -{delete})"

    def _merge(self, branch: str) -> str:
        try:
            self.client.merge(self.repo, branch, "main", message=f"merge {branch} at {self.version}")
        except LakeFSError as exc:  # nothing to merge, or a conflict: a plain step then
            return f"merge {branch} skipped ({type(exc).__name__})"
        self.keys["main"] = [o.path for o in self.client.list_objects(self.repo, "main", prefix="data/")]
        return f"merged {branch} into main"
