"""The e2e files' project: the run's one build of the demo DAG (tests/e2e/project.py), copied for each file.

The file names set the order on `make test`'s 2 workers (whole files, in collection order; xdist gives each worker
one file, then a second): test_first_hour.py goes to one worker (its `make install` and first hour, about 6
minutes), test_project_experiments.py to the other (it builds the project, about 5 minutes, then runs the
experiments), and test_repro.py follows the first hour, when the build is done: no worker waits on the lock, and the
three longest files are spread over both workers.
"""

import os
from pathlib import Path

import pytest

from tests.e2e.project import copy_project, shared_build


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """This file's own copy of the demo project, built once per run: under pytest-xdist the workers share the build
    (in the run's shared temp folder, as policy_dir is)."""
    base = tmp_path_factory.getbasetemp()
    shared = shared_build((base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "e2e-project")
    return copy_project(shared, tmp_path_factory.mktemp("e2e") / "project")
