"""Provider batch APIs: the same judge calls sent as one batch file at about half the online price.

A backend's `batch:` block is BatchConfig (transforms/judges/client.py). provider.py holds the contract a provider
implements (openai_provider.py: the OpenAI Batch API, which vLLM's batch runner and local_server.py speak too);
ledger.py records every batch submitted, so a rerun polls it instead of paying again; client.py runs a batch's
lifecycle behind the judge client contract; rounds.py is the label stage's pass that sends a stage's calls as
batches before its pipeline runs.
"""
