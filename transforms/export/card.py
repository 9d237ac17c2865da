"""Build the dataset card (README.md) of an export: YAML front matter that the Hub and `datasets` read, and a body.

In: the `ConfigExport` summaries hub_layout wrote, the card fields from params, the upstream manifests and the
provenance the driver gathered. Out: the README text. Pure (no I/O, no clock): the same export gives the same bytes.

The front matter's `configs` maps each config/split to its shard glob, which is what `load_dataset(folder, config)`
reads; `dataset_info` declares the features and each split's row count, which `datasets` checks when loading.
"""

from dataclasses import dataclass, field
from typing import Any

import datasets
import pyarrow as pa
import yaml

from rewardmill.schemas import PAIR_V1
from rewardmill.schemas.common import MESSAGES, schema_id
from rewardmill.transforms.export.hub_layout import ConfigExport

TAGS = ("rlhf", "dpo", "reward-model", "preference")
TASK_CATEGORIES = ("text-generation",)
DEFAULT_CONFIG = "pairs"  # what `load_dataset(repo)` loads without a config name
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"))

# Column descriptions for the schema table; a field's own `description` metadata, when set, takes precedence.
COLUMN_DOCS = {
    "pair_id": "sha256 of the prompt id and both rollout ids; unique per row",
    "prompt_id": "sha256 of the canonical prompt messages",
    "prompt": "the conversation before the answer (user turns), as `{role, content}` messages",
    "chosen": "the preferred assistant turn(s), as `{role, content}` messages",
    "rejected": "the dispreferred assistant turn(s), as `{role, content}` messages",
    "score_chosen": "aggregated reward of the chosen completion",
    "score_rejected": "aggregated reward of the rejected completion",
    "margin": "score gap between chosen and rejected; RewardTrainer's optional margin column",
    "confidence": "confidence of the labels behind the pair, in [0, 1]",
    "agreement": "share of labelers whose scores order the pair the same way",
    "pair_type": "how the pair was formed (e.g. best_vs_worst)",
    "chosen_rollout_id": "rollout id of the chosen completion (lineage)",
    "rejected_rollout_id": "rollout id of the rejected completion (lineage)",
    "chosen_n_tokens": "length of the chosen completion in policy tokens",
    "rejected_n_tokens": "length of the rejected completion in policy tokens",
    "label_sources": "`labeler@version` of every labeler that scored the pair",
    "task": "task family of the prompt (math, code, instruction, open, ...)",
    "split": "the split the row belongs to",
}


@dataclass(frozen=True)
class Provenance:
    """Where an export came from; every value is passed in by the driver. None = not available."""

    params_hash: str  # sha256 of the export params
    git_commit: str | None = None
    model: dict[str, str] | None = None  # the policy: {name, source, fingerprint}
    dvc_lock: str | None = None  # sha256 of the dvc.lock entries of the stages upstream of the export
    inputs: dict[str, str] = field(default_factory=dict)  # input name -> sha256 of its files


def build_card(
    configs: list[ConfigExport],
    *,
    pretty_name: str,
    license: str,
    provenance: Provenance,
    manifests: dict[str, dict[str, Any]] | None = None,
    repo_id: str | None = None,
) -> str:
    """-> README.md text. `manifests` maps a config to its upstream `_manifest.json`; `repo_id` goes in the snippet."""
    configs = sorted(configs, key=lambda c: c.name)
    manifests = manifests or {}
    front = yaml.safe_dump(front_matter(configs, pretty_name, license), sort_keys=False, allow_unicode=True,
                           width=4096)
    sections = [
        _intro(pretty_name, configs, provenance),
        _counts(configs, manifests),
        *(_schema(c) for c in configs if c.splits),
        _labels(configs),
        _loading(configs, repo_id),
        _provenance(configs, provenance, manifests),
    ]
    return f"---\n{front}---\n\n" + "\n\n".join(s for s in sections if s) + "\n"


def front_matter(configs: list[ConfigExport], pretty_name: str, license: str) -> dict[str, Any]:
    """The card's YAML metadata; configs without rows are left out (the Hub cannot load a config with no files)."""
    exported = [c for c in sorted(configs, key=lambda c: c.name) if c.splits]
    return {
        "license": license,
        "pretty_name": pretty_name,
        "task_categories": list(TASK_CATEGORIES),
        "tags": list(TAGS),
        "size_categories": [size_category(sum(c.num_rows for c in configs))],
        "configs": [
            {
                "config_name": c.name,
                **({"default": True} if c.name == DEFAULT_CONFIG else {}),
                "data_files": [{"split": s.name, "path": s.pattern(c.name)} for s in c.splits],
            }
            for c in exported
        ],
        "dataset_info": [
            {
                "config_name": c.name,
                "features": features_yaml(c.schema),
                "splits": [{"name": s.name, "num_bytes": s.num_bytes, "num_examples": s.num_rows} for s in c.splits],
                "download_size": sum(s.download_size for s in c.splits),
                "dataset_size": sum(s.num_bytes for s in c.splits),
            }
            for c in exported
        ],
    }


def features_yaml(schema: pa.Schema) -> list[dict[str, Any]]:
    # The serializer `datasets` itself uses for cards (push_to_hub), so `load_dataset` reads the features back.
    return datasets.Features.from_arrow_schema(schema)._to_yaml_list()


def size_category(rows: int) -> str:
    for bound, name in SIZE_CATEGORIES:
        if rows < bound:
            return name
    return "n>100M"


def type_name(dtype: pa.DataType) -> str:
    """Short readable type: `list<{role, content}>` for messages, `list<string>`, `float64`, ..."""
    if dtype == MESSAGES:
        return "list<{role, content}>"
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return f"list<{type_name(dtype.value_type)}>"
    if pa.types.is_struct(dtype):
        return "{" + ", ".join(f"{f.name}: {type_name(f.type)}" for f in dtype) + "}"
    return {"double": "float64", "float": "float32", "large_string": "string"}.get(str(dtype), str(dtype))


def describe(column: pa.Field) -> str:
    own = (column.metadata or {}).get(b"description")
    return own.decode() if own else COLUMN_DOCS.get(column.name, "")


def parse_source(source: str) -> tuple[str, str]:
    """`labeler@version` -> (labeler, version); a source without a version gives ""."""
    name, at, version = source.rpartition("@")
    return (name, version) if at else (source, "")


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _intro(pretty_name: str, configs: list[ConfigExport], provenance: Provenance) -> str:
    policy = (provenance.model or {}).get("name")
    lines = [
        f"# {pretty_name}",
        "",
        "Built with rewardmill: prompts are sampled on-policy"
        + (f" from `{policy}`" if policy else "")
        + ", every sample is scored by the labelers listed under *Labels*, and the scored samples are aggregated, "
        "filtered by confidence and agreement, and paired. Each config below is one dataset.",
    ]
    lines += ["", *(f"- `{c.name}`: {c.description}" for c in configs)]
    return "\n".join(lines)


def _counts(configs: list[ConfigExport], manifests: dict[str, dict[str, Any]]) -> str:
    rows = [[f"`{c.name}`", f"`{s.name}`", s.num_rows, len(s.files)] for c in configs for s in c.splits]
    rows += [[f"`{c.name}`", "(none)", 0, 0] for c in configs if not c.splits]
    lines = ["## Configs and splits", "", _table(["config", "split", "rows", "files"], rows)]
    for c in configs:
        rejects = manifests.get(c.name, {}).get("rejects") or {}
        if rejects:
            dropped = ", ".join(f"{reason}: {n}" for reason, n in sorted(rejects.items()))
            lines += ["", f"Rows of `{c.name}` dropped upstream, by reason: {dropped}."]
    return "\n".join(lines)


def _schema(config: ConfigExport) -> str:
    rows = [[f"`{f.name}`", f"`{type_name(f.type)}`", describe(f)] for f in config.schema]
    return "\n".join([f"## Schema of `{config.name}` ({schema_id(config.schema)})", "",
                      _table(["column", "type", "description"], rows)])


def _labels(configs: list[ConfigExport]) -> str:
    rows = []
    for c in configs:
        for source, n in c.label_sources:
            labeler, version = parse_source(source)
            rows.append([f"`{c.name}`", f"`{labeler}`", version or "(unversioned)", n])
    if not rows:
        return ""
    return "\n".join(["## Labels", "", "Labelers (from `label_sources`) and how many rows each scored.", "",
                      _table(["config", "labeler", "version", "rows"], rows)])


def _loading(configs: list[ConfigExport], repo_id: str | None) -> str:
    exported = [c for c in configs if c.splits]
    if not exported:
        return ""
    first = next((c for c in exported if c.name == DEFAULT_CONFIG), exported[0])
    where = repo_id or "export"
    note = "" if repo_id else "  # this folder (the export stage's output), or its Hub repo id once pushed"
    lines = ["## Loading", "", "```python", "from datasets import load_dataset", "",
             f'ds = load_dataset("{where}", "{first.name}"){note}', "```"]
    pairs = next((c for c in exported if schema_id(c.schema) == schema_id(PAIR_V1)), None)
    if pairs is None:
        return "\n".join(lines)
    split = next((s.name for s in pairs.splits if s.name == "train"), pairs.splits[0].name)
    load = [] if pairs is first else [f'ds = load_dataset("{where}", "{pairs.name}")']
    lines += [
        "",
        "## Training with TRL",
        "",
        "`prompt`, `chosen` and `rejected` are conversational (lists of `{role, content}` messages), the "
        "preference format TRL's `DPOTrainer` and `RewardTrainer` load as is; `RewardTrainer` also uses "
        "`margin`. The other columns are lineage for re-filtering (e.g. by `confidence` or `agreement`); the "
        'trainers do not read them, and `select_columns(["prompt", "chosen", "rejected"])` drops them.',
        "",
        "```python",
        "from trl import DPOConfig, DPOTrainer",
        "",
        *load,
        f'trainer = DPOTrainer(model=model, args=DPOConfig(output_dir="dpo"), train_dataset=ds["{split}"],',
        "                     processing_class=tokenizer)",
        "```",
    ]
    return "\n".join(lines)


def _provenance(configs: list[ConfigExport], provenance: Provenance, manifests: dict[str, dict[str, Any]]) -> str:
    model = provenance.model or {}
    rows = [
        ["git commit", f"`{provenance.git_commit}`" if provenance.git_commit else "not recorded (no git checkout)"],
        ["export params sha256", f"`{provenance.params_hash}`"],
    ]
    if model:
        rows.append(["policy", f"`{model.get('name', '')}` from `{model.get('source', '')}`"])
        rows.append(["policy fingerprint", f"`{model.get('fingerprint', '')}`"])
    for c in configs:
        upstream = manifests.get(c.name, {}).get("params_hash")
        if upstream:
            rows.append([f"`{c.name}` upstream params sha256", f"`{upstream}`"])
    for name, digest in sorted(provenance.inputs.items()):
        rows.append([f"input `{name}` sha256", f"`{digest}`"])
    if provenance.dvc_lock:
        rows.append(["dvc.lock sha256 (stages upstream of export)", f"`{provenance.dvc_lock}`"])
    rebuild = "`dvc repro export`"
    if provenance.git_commit:
        rebuild = f"`git checkout {provenance.git_commit}` then {rebuild}"
    return "\n".join(["## Provenance", "", _table(["what", "value"], rows), "", f"Rebuild with {rebuild}."])
