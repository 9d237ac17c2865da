"""Small JSON files (counts a pipeline hands back to its driver) through Beam FileSystems.

Workers of a cluster runner may run on other machines: they never write local files. They write here, beside the
stage's output (local disk, a shared mount, s3://, gs://), and the driver reads the file back and deletes it.
"""

import json
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems


def write_json(path: str, obj: Any) -> None:
    with FileSystems.create(path) as fh:
        fh.write((json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())


def pop_json(path: str) -> Any:
    """Read the JSON file at `path` and delete it; None when it is missing (its step never ran)."""
    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path) as fh:
        obj = json.loads(fh.read().decode())
    FileSystems.delete([path])
    return obj


class WriteJson(beam.DoFn):
    """Each element (one, from a global combine) -> the JSON file at `path`."""

    def __init__(self, path: str):
        self.path = path

    def process(self, obj):
        write_json(self.path, obj)
