"""Write the grown prompt sizes into params.yaml, keeping everything else as it was: the comments, the key order, the
`null`s (ruamel.yaml's round trip, set to this project's layout). The file is written to a temp name and renamed."""

import os
from pathlib import Path

from ruamel.yaml import YAML

from rewardmill.transforms.targets.sizes import SizePath, set_size


def round_trip_yaml() -> YAML:
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long line
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.representer.add_representer(type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    return yaml


def write_sizes(path: Path, sizes: dict[int, dict[SizePath, int]]) -> None:
    """Set prompts.sources[i]'s sizes for each i in `sizes`."""
    yaml = round_trip_yaml()
    data = yaml.load(path.read_text())
    sources = data["prompts"]["sources"]
    for index, entry_sizes in sizes.items():
        for size_path, size in entry_sizes.items():
            set_size(sources[index], size_path, size)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w") as fh:
        yaml.dump(data, fh)
    os.replace(tmp, path)
