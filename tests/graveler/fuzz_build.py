"""The sanitized build of the C range-file reader for the fuzzer: ``graveler/_native.c`` compiled with
AddressSanitizer and UndefinedBehaviorSanitizer into a cache directory, the environment a Python built without
sanitizers needs to load it (``LD_PRELOAD`` of libasan, ``PYTHONMALLOC=malloc`` so every Python buffer sits in ASan's
heap), and loading it beside the installed extension."""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import subprocess
import sysconfig
from pathlib import Path
from types import ModuleType

import lakefs_mirror_dagster.graveler as graveler

SOURCE = Path(graveler.__file__).with_name("_native.c")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lakefs-mirror-dagster" / "fuzz-native"
FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g", "-O1"]


def build_sanitized(cache_dir: Path = CACHE) -> Path:
    """``_native.c`` compiled with ASan and UBSan, cached by the source's and the flags' hash."""
    py = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    key = hashlib.sha256(SOURCE.read_bytes() + " ".join([*FLAGS, py, suffix]).encode()).hexdigest()[:16]
    target = cache_dir / key / f"_native{suffix}"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    cmd = ["gcc", "-shared", "-fPIC", *FLAGS, f"-I{py}", str(SOURCE), "-o", str(partial)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"building the sanitized extension failed: {' '.join(cmd)}\n{done.stderr}")
    partial.replace(target)
    return target


def sanitizer_env() -> dict[str, str]:
    """The environment a Python built without sanitizers needs to load the sanitized extension."""
    libasan = subprocess.run(
        ["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()
    if not os.path.isabs(libasan):
        raise RuntimeError("gcc does not know where libasan.so is: install the gcc package with its sanitizers")
    env = dict(os.environ)
    env.update(
        LD_PRELOAD=libasan,
        ASAN_OPTIONS="detect_leaks=0:exitcode=86:allocator_may_return_null=1:malloc_context_size=0:quarantine_size_mb=64",
        UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87",
        PYTHONMALLOC="malloc",
        PYTHONFAULTHANDLER="1",
    )
    return env


def load_extension(path: Path) -> ModuleType:
    """The extension at ``path`` as a module of its own (the installed one stays as it is)."""
    loader = importlib.machinery.ExtensionFileLoader("lakefs_mirror_dagster.graveler._native", str(path))
    spec = importlib.util.spec_from_file_location(loader.name, str(path), loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
