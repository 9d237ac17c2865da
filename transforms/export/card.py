"""Build the dataset card (README.md) of an export: YAML front matter that the Hub and `datasets` read, and a body.

In: the `ConfigExport` summaries hub_layout wrote (splits, label sources, statistics of the rows), the card fields
from params, each config's upstream `_manifest.json` and the provenance the driver gathered. Out: the README text.
Pure (no I/O, no clock): the same export gives the same bytes.

The front matter's `configs` maps each config/split to its shard glob, which is what `load_dataset(folder, config)`
reads; `dataset_info` declares the features and each split's row count, which `datasets` checks when loading.

Body: an intro naming each config; configs and splits; a link to the offline viewer page (when given); rows rejected
upstream; label methods; the reward weights used and why; the labelers' accuracy on the gold packs (when given);
pair types; statistics; one schema table per config; loading; training with TRL per config; provenance.

Upstream manifest keys read (all optional): `rejects` {reason: rows}, `labelers` [name], `labeler_versions`
{labeler: version or [versions]}, `pair_types` {type: rows}, `step_labelers` [name], `step_methods` {name: method},
`gates` [name] (rl: the GRPO snippet's reward functions), `params_hash`, `inputs` {name: sha256}, `reward_weights`
{labeler: {weight, source, reason, rows, accuracy, kappa}} (the *Reward weights* section).
"""

import keyword
from typing import Any

import datasets
import pyarrow as pa
import yaml

from rewardmill.schemas.common import MESSAGES, schema_id
from rewardmill.transforms.evaluation.audit import METRICS, measured_on, share
from rewardmill.transforms.export.hub_layout import ConfigExport
from rewardmill.transforms.export.markdown import table
from rewardmill.transforms.export.provenance import Provenance, provenance_section
from rewardmill.transforms.export.reward_weights import reward_weights_section
from rewardmill.transforms.export.rubric_validation import learned_rules_section, rubric_validation_section
from rewardmill.transforms.export.spend import spend_section
from rewardmill.transforms.export.trainers import training_section

__all__ = ["Provenance", "build_card", "front_matter", "parse_source", "size_category", "type_name"]

TASK_CATEGORIES = ("text-generation",)
TAGS = ("rlhf", "reward-model")
KIND_TAGS = {  # added for each kind of config present, in this order
    "preference": ("dpo", "preference"),
    "stepwise": ("process-reward-model", "prm"),
    "prompt_only": ("grpo", "rl"),
    "prompt_completion": ("sft", "rejection-sampling"),
}
DEFAULT_CONFIG = "pairs"  # what `load_dataset(repo)` loads without a config name (else the first config)
SIZE_CATEGORIES = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
)


def build_card(
    configs: list[ConfigExport],
    *,
    pretty_name: str,
    license: str,
    provenance: Provenance,
    manifests: dict[str, dict[str, Any]] | None = None,
    repo_id: str | None = None,
    viewer: str | None = None,
    labeler_audit: dict[str, Any] | None = None,
    judge_probes: dict[str, dict[str, Any]] | None = None,
    learned_rules: dict[str, dict[str, Any]] | None = None,
) -> str:
    """-> README.md text. `manifests` maps a config to its upstream `_manifest.json`; `repo_id` goes in snippets;
    `viewer` is the export's offline viewer page (a path relative to the card), linked when given; `labeler_audit` is
    the validate stage's metrics `labeler_audit` (or `rewardmill audit --output`'s JSON), shown as a table;
    `judge_probes` maps a judge's params key to its attack-probe numbers (transforms/judges/probes.summary);
    `learned_rules` maps a rule_checker's params key to its label manifest (its rule set and the kept rules)."""
    configs = sorted(configs, key=lambda c: c.name)
    manifests = {c.name: (manifests or {}).get(c.name) or {} for c in configs}
    front = yaml.safe_dump(
        front_matter(configs, pretty_name, license), sort_keys=False, allow_unicode=True, width=4096
    )
    sections = [
        _intro(pretty_name, configs, provenance),
        _counts(configs),
        _viewer(viewer),
        _rejects(configs, manifests),
        _label_methods(configs, manifests, provenance),
        reward_weights_section(manifests),
        rubric_validation_section(manifests),
        spend_section(manifests),
        learned_rules_section(learned_rules),
        labeler_accuracy_section(labeler_audit),
        judge_probes_section(judge_probes),
        _pair_types(configs, manifests),
        _statistics(configs),
        *(_schema(c) for c in configs if c.splits),
        _loading(configs, repo_id),
        _training(configs, repo_id, manifests),
        provenance_section(provenance, license, manifests),
    ]
    return f"---\n{front}---\n\n" + "\n\n".join(s for s in sections if s) + "\n"


def front_matter(configs: list[ConfigExport], pretty_name: str, license: str) -> dict[str, Any]:
    """The card's YAML metadata; configs without rows are left out (the Hub cannot load a config with no files)."""
    exported = [c for c in sorted(configs, key=lambda c: c.name) if c.splits]
    default = default_config(exported)
    kinds = {c.kind for c in exported}
    return {
        "license": license,
        "pretty_name": pretty_name,
        "task_categories": list(TASK_CATEGORIES),
        "tags": [*TAGS, *(t for kind, tags in KIND_TAGS.items() if kind in kinds for t in tags)],
        "size_categories": [size_category(sum(c.num_rows for c in configs))],
        "configs": [
            {
                "config_name": c.name,
                **({"default": True} if c.name == default else {}),
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


def default_config(exported: list[ConfigExport]) -> str | None:
    names = [c.name for c in exported]
    return DEFAULT_CONFIG if DEFAULT_CONFIG in names else (names[0] if names else None)


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
    return own.decode() if own else ""


def parse_source(source: str) -> tuple[str, str]:
    """`labeler@version` -> (labeler, version); a source without a version gives ""."""
    name, at, version = source.rpartition("@")
    return (name, version) if at else (source, "")


def _intro(pretty_name: str, configs: list[ConfigExport], provenance: Provenance) -> str:
    policy = (provenance.model or {}).get("name")
    recorded = [p for p in provenance.policies if p[1] == "recorded"]
    pool = "" if recorded else ", ".join(f"`{name}`" for name, *_ in provenance.policies)
    if recorded:  # nothing was sampled: the rows are someone's recorded transcripts
        origin = (
            "Built with rewardmill from recorded transcripts, **off-policy**: no policy here sampled them (the "
            f"`recorded` policy's fingerprint `{recorded[0][3]}` is the traces files' sha256)"
        )
    elif pool:
        origin = f"Built with rewardmill from the samples of a pool of policies ({pool})"
    else:
        origin = "Built with rewardmill from the policy's own samples" + (f" (`{policy}`)" if policy else "")
    lines = [
        f"# {pretty_name}",
        "",
        origin
        + ": every sample is scored by the labelers under *Label methods*, the scores are aggregated into one reward "
        "per sample, and each config below is built from the scored samples. Load one with "
        "`load_dataset(<this repo>, <config>)`.",
        "",
    ]
    for c in configs:
        splits = ", ".join(f"{s.name} {s.num_rows}" for s in c.splits) or "no rows"
        lines.append(f"- `{c.name}` ({c.num_rows} rows: {splits}): {c.description}")
    return "\n".join(lines)


def _counts(configs: list[ConfigExport]) -> str:
    rows = [[f"`{c.name}`", f"`{s.name}`", s.num_rows, len(s.files)] for c in configs for s in c.splits]
    rows += [[f"`{c.name}`", "(none)", 0, 0] for c in configs if not c.splits]
    return "\n".join(["## Configs and splits", "", table(["config", "split", "rows", "files"], rows)])


def _viewer(viewer: str | None) -> str:
    if not viewer:
        return ""
    return (
        f"## Browse the rows\n\n[`{viewer}`]({viewer}) is one static HTML page of this export: pairs side by side "
        "with their scores, process-reward steps coloured by label, RL prompts with their pass rates; filters by "
        "config, pair type, difficulty, split and text. Download it and open it in a browser: it loads nothing from "
        "a network. (`rewardmill view export` writes it again.)"
    )


def _rejects(configs: list[ConfigExport], manifests: dict[str, dict[str, Any]]) -> str:
    rows = [
        [f"`{c.name}`", f"`{reason}`", n]
        for c in configs
        for reason, n in sorted((manifests[c.name].get("rejects") or {}).items())
    ]
    if not rows:
        return ""
    return "\n".join(
        [
            "## Rejected upstream",
            "",
            "Rows the assemble stage could not use, by reason (counted, never dropped silently; the "
            "rejected rows themselves stay in the pipeline's `_rejects/` folders and are not exported).",
            "",
            table(["config", "reason", "rows"], rows),
        ]
    )


def _label_methods(configs: list[ConfigExport], manifests: dict[str, dict[str, Any]], provenance: Provenance) -> str:
    """One row per (config, labeler, version): versions from the rows' `label_sources`, else from the manifest's
    `labeler_versions`, else from the label stage's manifest; methods from prm's `step_methods`, else the labeler's
    registry key; rows = rows the labeler scored ("-" where a config does not record it per row, e.g. rl)."""
    label_stages = {key: (labeler, version) for key, labeler, version in provenance.labelers}
    rows = []
    for c in configs:
        manifest = manifests[c.name]
        # Steps labelers are params `steps` keys, a namespace apart from the label stages' `labelers` keys.
        registry = {} if c.kind == "stepwise" else label_stages
        versions = {
            **{k: v for k, (_, v) in registry.items()},
            **{k: join_versions(v) for k, v in (manifest.get("labeler_versions") or {}).items()},
        }
        methods = manifest.get("step_methods") or {}
        scored: dict[tuple[str, str], int | None] = {}
        for source, n in c.label_sources:
            name, version = parse_source(source)
            scored[(name, version or str(versions.get(name) or ""))] = n
        named = {*(manifest.get("labelers") or ()), *(manifest.get("step_labelers") or ())}
        for name in sorted(named - {name for name, _ in scored}):
            scored[(name, str(versions.get(name) or ""))] = None  # named by the manifest, not recorded per row
        unknown = "-" if c.kind == "stepwise" else "(unversioned)"  # steps labels carry a method, not a version
        for (name, version), n in sorted(scored.items()):
            method = methods.get(name) or registry.get(name, ("", ""))[0] or "-"
            rows.append([f"`{c.name}`", f"`{name}`", version or unknown, method, "-" if n is None else n])
    if not rows:
        return ""
    return "\n".join(
        [
            "## Label methods",
            "",
            "The labelers behind each config, their versions (a version changes when a labeler's results "
            "can change), how they label (registry key, or the steps method for process labels) and how "
            "many rows each scored. Judge models are listed under *Provenance*.",
            "",
            table(["config", "labeler", "version", "method", "rows"], rows),
        ]
    )


def labeler_accuracy_section(labeler_audit: dict[str, Any] | None) -> str:
    """Each audited labeler's precision, recall, abstain rate and hack pass rate on the gold packs, with intervals;
    "" when there is no audit or it names no labeler."""
    results = (labeler_audit or {}).get("labelers") or {}
    if not results:
        return ""
    rows = [
        [f"`{key}`", r.get("rows", 0), *(share(r.get(m)) for m in METRICS[:4]), measured_on(r)]
        for key, r in sorted(results.items())
    ]
    confidence = round(100 * float(labeler_audit.get("confidence", 0.95)))
    return "\n".join(
        [
            "## Label accuracy on the gold packs",
            "",
            "Each labeler measured on hand-labeled completions (rewardmill's gold packs: honest answers, sincere "
            "wrong ones and answers written to game a verifier) with the settings that labeled this dataset. "
            "Precision: of the answers it called correct, the share that are; recall: of the correct answers, the "
            "share it called correct; abstain rate: the share it could not label; hack pass rate: the share of "
            f"gaming answers it rewarded. In brackets: a {confidence}% Wilson interval and the number of rows behind "
            "the share.",
            "",
            table(["labeler", "rows", "precision", "recall", "abstain rate", "hack pass rate", "measured on"], rows),
        ]
    )


def judge_probes_section(judge_probes: dict[str, dict[str, Any]] | None) -> str:
    """One row per probed judge: attack probes (master keys, empty symbols, special-token and prompt injections, run
    as completions of the run's own prompts) it credited, its false-positive rate overall and per kind, and the
    limit above which it may not be a gate or an override. "" when no judge was probed."""
    rows = []
    for name, report in sorted((judge_probes or {}).items()):
        if not report or not report.get("probes"):
            continue
        kinds = ", ".join(f"{kind} {rate:.2f}" for kind, rate in sorted((report.get("fpr_by_kind") or {}).items()))
        limit = report.get("max_fpr")
        rows.append(
            [
                f"`{name}`",
                f"{report['credited']} / {report['probes']}",
                f"{report['fpr']:.2f}",
                kinds or "-",
                "-" if limit is None else f"{limit:.2f}",
            ]
        )
    if not rows:
        return ""
    return "\n".join(
        [
            "## Judge attack probes",
            "",
            "Each LLM judge was given completions written to be credited while answering nothing (master keys such "
            'as "Solution", empty symbols such as "{", special-token and prompt injections) for a sample of this '
            "run's prompts. A credited probe is a false positive; a judge above its limit may rank rollouts but "
            "not gate or override them.",
            "",
            table(["judge", "probes credited", "false-positive rate", "by kind", "limit"], rows),
        ]
    )


def join_versions(versions: str | list[str] | None) -> str:
    """A manifest's `labeler_versions` value (one version, or every version that scored rows) -> "1" / "1, 2"."""
    if isinstance(versions, list | tuple):
        return ", ".join(str(v) for v in versions)
    return "" if versions is None else str(versions)


def _pair_types(configs: list[ConfigExport], manifests: dict[str, dict[str, Any]]) -> str:
    rows = []
    for c in configs:
        if c.kind != "preference":
            continue
        exported = dict(dict(c.summary.counts).get("pair_type", ()))
        for pair_type in sorted({*exported, *(manifests[c.name].get("pair_types") or {})}):
            rows.append([f"`{c.name}`", f"`{pair_type}`", exported.get(pair_type, 0)])
    if not rows:
        return ""
    return "\n".join(
        [
            "## Pair types",
            "",
            "How the pairs were chosen from each prompt's samples (a pair two strategies choose is kept "
            "once, for the first).",
            "",
            table(["config", "pair_type", "rows"], rows),
        ]
    )


def _statistics(configs: list[ConfigExport]) -> str:
    parts = []
    for c in configs:
        if not c.summary.metrics:
            continue
        lines = [f"### `{c.name}`", "", table(["what", "value"], [list(m) for m in c.summary.metrics])]
        for column, counts in c.summary.counts:
            if column == "pair_type":
                continue  # its own section
            lines += ["", table([f"`{column}`", "rows"], [[f"`{v}`", n] for v, n in counts])]
        parts.append("\n".join(lines))
    if not parts:
        return ""
    return "\n\n".join(
        [
            "## Statistics\n\nComputed from the exported rows (all splits together): the agreement and "
            "confidence of the labels behind the pairs, pass rates of the RL prompts, and more.",
            *parts,
        ]
    )


def _schema(config: ConfigExport) -> str:
    rows = [[f"`{f.name}`", f"`{type_name(f.type)}`", describe(f)] for f in config.schema]
    return "\n".join(
        [
            f"## Schema of `{config.name}` ({schema_id(config.schema)})",
            "",
            table(["column", "type", "description"], rows),
        ]
    )


def variable(config: str) -> str:
    """A Python name for a config in the loading snippet (config names may hold '-' and '.', or start with a
    digit)."""
    name = config.replace("-", "_").replace(".", "_")
    return name if name.isidentifier() and not keyword.iskeyword(name) else f"ds_{name}"


def _where(repo_id: str | None) -> str:
    return repo_id or "export"


def _loading(configs: list[ConfigExport], repo_id: str | None) -> str:
    exported = [c for c in configs if c.splits]
    if not exported:
        return ""
    note = "" if repo_id else "  # this folder (the export stage's output), or its Hub repo id once pushed"
    loads = [f'{variable(c.name)} = load_dataset("{_where(repo_id)}", "{c.name}")' for c in exported]
    loads[0] += note
    return "\n".join(["## Loading", "", "```python", "from datasets import load_dataset", "", *loads, "```"])


def _training(configs: list[ConfigExport], repo_id: str | None, manifests: dict[str, dict[str, Any]]) -> str:
    parts = []
    for c in configs:
        if not c.splits:
            continue
        split = next((s.name for s in c.splits if s.name == "train"), c.splits[0].name)
        labelers = tuple(name for name, _ in c.label_sources)  # prm: the `labeler` values of the exported rows
        goals = None
        if c.kind == "prompt_only":  # rl: its gates (the rule verifiers that set pass_rate) become reward functions,
            labelers = tuple(manifests[c.name].get("gates") or ())  # with the weighted labelers, as the reward is made
            goals = manifests[c.name].get("objectives")
            labelers = tuple(goals["rewards"]) if goals else labelers
        section = training_section(c.name, c.kind, split, _where(repo_id), labelers, goals)
        if section:
            parts.append(section)
    if not parts:
        return ""
    return "\n\n".join(
        [
            "## Training with TRL\n\nEach config loads into a TRL trainer without renaming columns; "
            "`path/to/...` stands for your model.",
            *parts,
        ]
    )
