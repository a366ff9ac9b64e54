"""The fixtures of the Python package's test suite: the backend under test and its database.

Run by ctest once per backend (tests/CMakeLists.txt, python.<backend>) with
SQLOCK_TEST_BACKEND=sqlite|postgresql|mysql; the servers' URLs come from tools/testdb.sh
(SQLOCK_TEST_POSTGRES_URL, SQLOCK_TEST_MYSQL_URL). A backend whose URL is missing FAILS: it
is never skipped. PYTHONPATH names the build tree's python/ directory (the package as built).
"""
from __future__ import annotations

import itertools
import os
import uuid
from typing import Iterator

import pytest

import sqlock

_counter = itertools.count()


def backend() -> str:
    """The backend under test (SQLOCK_TEST_BACKEND, default sqlite)."""
    return os.environ.get("SQLOCK_TEST_BACKEND", "sqlite")


def helper(name: str) -> str:
    """The path of a helper program the ctest registration passes in ``name`` (env)."""
    path = os.environ.get(name)
    if not path:
        pytest.fail(f"{name} is not set (run the suite through ctest: python.<backend>)")
    return path


@pytest.fixture(scope="session")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The URL of the lock database under test (migrated once)."""
    which = backend()
    if which == "sqlite":
        found = "sqlite://" + str(tmp_path_factory.mktemp("db") / "locks.db")
    else:
        variable = {"postgresql": "SQLOCK_TEST_POSTGRES_URL",
                    "mysql": "SQLOCK_TEST_MYSQL_URL"}.get(which)
        if variable is None:
            pytest.fail(f"unknown SQLOCK_TEST_BACKEND {which!r}")
        found = os.environ.get(variable, "")
        if not found:
            pytest.fail(f"{variable} is not set: run under tools/testdb.sh (never skipped)")
    with sqlock.connect(found) as db:
        db.migrate()
    return found


@pytest.fixture
def db(url: str) -> Iterator[sqlock.Database]:
    """A connection to the database under test."""
    database = sqlock.connect(url)
    yield database
    database.close()


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """A lock name no other test (or earlier run) uses."""
    return f"py:{request.node.name[:60]}:{os.getpid()}:{next(_counter)}:{uuid.uuid4().hex[:8]}"
