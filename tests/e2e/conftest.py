"""The e2e files' project: the run's one build of the demo DAG (tests/e2e/project.py), copied for each file."""

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
