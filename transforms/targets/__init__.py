"""Exact row targets (params `targets`): `rewardmill repro` runs the DAG in rounds, growing the prompt sources by the
acceptance rates it observed per task, until every target is met, a budget stops it or the sources run dry
(docs/targets.md). Pure logic; the rounds' driver is pipelines/repro.py."""
