"""Every batch a client submitted, kept beside the call cache, so a run killed while a batch is in flight polls that
batch on its rerun instead of paying for its requests again.

One JSON file per judge model (`<call cache>/batches/<model hash>.json`), rewritten whole (atomically):
{batches: [{id, token, ids (custom ids), attempt, submitted_at}]}.

A submission is written twice, around the provider's `submit`: first as an intent (`id` null, a fresh `token` that
also goes into the batch's metadata), then with the id the provider answered. A run killed between the two leaves an
intent: its rerun asks the provider for a batch carrying that token (`BatchProvider.find`) and adopts it, or, when
there is none (the kill came before the batch was created), drops the intent and submits the requests itself. So no
moment of a kill makes a request run twice.

Entries with an id are never removed: a rerun asks for the calls the cache lacks, and a request's latest batch is
the one that answers it. A finished batch costs nothing to read again (its results are files), so nothing needs
marking as collected.
"""

import hashlib
import json
import time
import uuid
from dataclasses import asdict, dataclass, replace

from rewardmill.transforms.io import storage


@dataclass(frozen=True)
class Entry:
    id: str | None  # the provider's batch id; None while the submission is only an intent
    ids: tuple[str, ...]  # the custom ids it carries (the call cache keys)
    attempt: int  # 0 = first submission; n = the n-th resubmission of requests that failed or expired
    submitted_at: float
    token: str = ""  # the submission's token, in the batch's metadata (ledgers written before tokens have none)


class Ledger:
    def __init__(self, cache_dir: str, model_id: str):
        name = hashlib.sha256(model_id.encode()).hexdigest()[:16]
        self.path = storage.join(cache_dir, "batches", f"{name}.json")
        self.model_id = model_id

    def all_entries(self) -> list[Entry]:
        """Batches and intents, in the order they were written."""
        if not storage.exists(self.path):
            return []
        data = json.loads(storage.read_text(self.path))
        return [
            Entry(e["id"], tuple(e["ids"]), e["attempt"], e["submitted_at"], e.get("token", ""))
            for e in data["batches"]
        ]

    def entries(self) -> list[Entry]:
        """The batches the provider created (intents left out)."""
        return [e for e in self.all_entries() if e.id is not None]

    def intents(self) -> list[Entry]:
        """Submissions a killed run started and never saw answered."""
        return [e for e in self.all_entries() if e.id is None]

    def intend(self, ids: list[str], attempt: int) -> Entry:
        """Record a submission before it is sent; its token goes into the batch's metadata."""
        entry = Entry(None, tuple(ids), attempt, round(time.time(), 3), uuid.uuid4().hex)
        self._write([*self.all_entries(), entry])
        return entry

    def confirm(self, intent: Entry, batch_id: str) -> Entry:
        """The provider created the intent's batch as `batch_id`."""
        entry = replace(intent, id=batch_id)
        self._write([entry if e.token == intent.token and e.id is None else e for e in self.all_entries()])
        return entry

    def drop(self, intent: Entry) -> None:
        """The intent's batch was never created: forget it, so its requests are submitted again."""
        self._write([e for e in self.all_entries() if not (e.token == intent.token and e.id is None)])

    def latest(self, wanted: set[str]) -> list[Entry]:
        """The batches that last carried any of `wanted`, oldest first: each wanted id goes to its latest batch."""
        owner: dict[str, Entry] = {}
        for entry in self.entries():
            for custom_id in entry.ids:
                if custom_id in wanted:
                    owner[custom_id] = entry
        chosen = {e.id: e for e in owner.values()}
        return sorted(chosen.values(), key=lambda e: e.submitted_at)

    def _write(self, batches: list[Entry]) -> None:
        record = {"model_id": self.model_id, "batches": [asdict(e) | {"ids": list(e.ids)} for e in batches]}
        storage.write_text(self.path, json.dumps(record, ensure_ascii=False, indent=1))
