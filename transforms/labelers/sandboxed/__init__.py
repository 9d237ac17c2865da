"""Programs that run inside the code sandbox (code_protocol.py bundles each with codec.py into one script)."""
