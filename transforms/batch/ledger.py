"""Every batch a client submitted, kept beside the call cache, so a run killed while a batch is in flight polls that
batch on its rerun instead of paying for its requests again.

One JSON file per judge model (`<call cache>/batches/<model hash>.json`), rewritten whole (atomically) when a batch
is submitted: {batches: [{id, ids (custom ids), attempt, submitted_at}]}. Entries are never removed: a rerun asks
for the calls the cache lacks, and a request's latest batch is the one that answers it. A finished batch costs
nothing to read again (its results are files), so nothing needs marking as collected.
"""

import hashlib
import json
import time
from dataclasses import asdict, dataclass

from rewardmill.transforms.io import storage


@dataclass(frozen=True)
class Entry:
    id: str  # the provider's batch id
    ids: tuple[str, ...]  # the custom ids it carries (the call cache keys)
    attempt: int  # 0 = first submission; n = the n-th resubmission of requests that failed or expired
    submitted_at: float


class Ledger:
    def __init__(self, cache_dir: str, model_id: str):
        name = hashlib.sha256(model_id.encode()).hexdigest()[:16]
        self.path = storage.join(cache_dir, "batches", f"{name}.json")
        self.model_id = model_id

    def entries(self) -> list[Entry]:
        if not storage.exists(self.path):
            return []
        data = json.loads(storage.read_text(self.path))
        return [Entry(e["id"], tuple(e["ids"]), e["attempt"], e["submitted_at"]) for e in data["batches"]]

    def add(self, batch_id: str, ids: list[str], attempt: int) -> Entry:
        entry = Entry(batch_id, tuple(ids), attempt, round(time.time(), 3))
        batches = [*self.entries(), entry]
        record = {"model_id": self.model_id, "batches": [asdict(e) | {"ids": list(e.ids)} for e in batches]}
        storage.write_text(self.path, json.dumps(record, ensure_ascii=False, indent=1))
        return entry

    def latest(self, wanted: set[str]) -> list[Entry]:
        """The batches that last carried any of `wanted`, oldest first: each wanted id goes to its latest batch."""
        owner: dict[str, Entry] = {}
        for entry in self.entries():
            for custom_id in entry.ids:
                if custom_id in wanted:
                    owner[custom_id] = entry
        chosen = {e.id: e for e in owner.values()}
        return sorted(chosen.values(), key=lambda e: e.submitted_at)
