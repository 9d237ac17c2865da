"""Evaluate a built dataset by what it trains and how its labelers rank verified pairs (the `evaluate` stage)."""
