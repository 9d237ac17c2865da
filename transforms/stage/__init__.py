"""The framework every stage runs on: its Beam runner (runner.py), its outputs and manifests (outputs.py), the
conservation check (conservation.py) and the shared stage skeleton. Stage entry points live in pipelines/."""
