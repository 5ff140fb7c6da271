"""Fixtures of the book's tests; modules opt in with pytestmark."""

import pytest

from albert_mini.book.exercises import checking


@pytest.fixture
def first_try(monkeypatch):
    """A learner's first try: the hint tiers count wrong tries per exercise in a kernel, so each test that asks for
    this starts from none (and leaves the count it found as it was)."""
    monkeypatch.setattr(checking, "_ATTEMPTS", {})
