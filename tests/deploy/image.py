"""The service's OCI image, built by ``deploy/image/build.sh`` from the project's wheel and cached.

``scripts/dev image`` runs this module: it builds the wheel (``tests/packaging/wheel.py``, itself cached), then
the image once per hash of the wheel, the recipe (``deploy/image/``) and ``constraints.txt``, into
``~/.cache/lakefs-mirror-dagster/image/lakefs-mirror-<version>-<hash>.oci.tar`` (``$LAKEFS_MIRROR_CACHE``), under
a lock file. A second run with nothing changed only hashes. It prints the archive, its size and the time taken.
The image test (tests/deploy/test_image.py) uses :func:`built_image` and skips when no image was built.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from lakefs_mirror_devenv import cache_dir

from lakefs_mirror_dagster import __version__
from tests.packaging.wheel import CONSTRAINTS, ROOT, _locked, build_wheel

__all__ = ["IMAGE_NAME", "RECIPE", "Image", "build_image", "built_image", "image_tools_missing", "main"]

RECIPE = ROOT / "deploy" / "image"
IMAGE_NAME = "localhost/lakefs-mirror"
#: mmdebstrap, the Python install and the export take a few minutes on 2 shared cores: an hour means stuck.
_BUILD_TIMEOUT_S = 3600


@dataclass(frozen=True)
class Image:
    archive: Path  # the OCI archive (`podman load -i` / `docker load -i`)
    tag: str  # its name in this machine's containers storage, and inside the archive
    size: int  # bytes of the archive


def _key(wheel: Path) -> str:
    """Hash of what the image is made of: the wheel's bytes, the recipe's files and the pinned versions."""
    digest = hashlib.sha256()
    for path in [wheel, CONSTRAINTS, *sorted(p for p in RECIPE.rglob("*") if p.is_file())]:
        digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def _archive_for(key: str) -> Path:
    return cache_dir() / "image" / f"lakefs-mirror-{__version__}-{key}.oci.tar"


def image_tools_missing() -> list[str]:
    """The commands the build needs and this machine lacks (Debian packages of the same names)."""
    return [tool for tool in ("mmdebstrap", "buildah") if shutil.which(tool) is None]


def built_image() -> Image | None:
    """The image of the checkout as it is now, if ``scripts/dev image`` built it (builds the wheel if needed)."""
    archive = _archive_for(_key(build_wheel()))
    if not archive.is_file():
        return None
    return Image(archive, f"{IMAGE_NAME}:{__version__}", archive.stat().st_size)


def build_image() -> Image:
    """The image of the checkout, built unless the cache holds one of the same wheel, recipe and constraints."""
    wheel = build_wheel()
    key = _key(wheel)
    archive = _archive_for(key)
    with _locked(archive.with_suffix(".lock")):
        if not archive.is_file():
            missing = image_tools_missing()
            if missing:
                raise SystemExit(
                    f"building the image needs {', '.join(missing)} (apt-get install -y {' '.join(missing)})"
                )
            print(
                f"[image] building {archive.name} from {wheel.name} (first time for this wheel: a few minutes)…",
                file=sys.stderr,
                flush=True,
            )
            done = subprocess.run(
                [
                    str(RECIPE / "build.sh"),
                    str(wheel),
                    str(CONSTRAINTS),
                    str(archive),
                    __version__,
                    f"{IMAGE_NAME}:{__version__}",
                ],
                timeout=_BUILD_TIMEOUT_S,
                check=False,
            )
            if done.returncode != 0:
                raise SystemExit(f"deploy/image/build.sh failed (exit {done.returncode}): its output is above")
    return Image(archive, f"{IMAGE_NAME}:{__version__}", archive.stat().st_size)


def main() -> int:
    """``scripts/dev image``: build (or find) the image; print where it is, its size and how long it took."""
    start = time.monotonic()
    image = build_image()
    print(f"[image] {image.archive}")
    print(f"[image] {image.tag}, {image.size / 1e6:.1f} MB, {time.monotonic() - start:.1f}s")
    print(f"[image] load it with: podman load -i {image.archive}   (or docker load -i …)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
