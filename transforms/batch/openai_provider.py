"""The OpenAI Batch API through the `openai` SDK: a JSONL file of `{custom_id, method, url, body}` lines uploaded
with purpose `batch`, a batch created on `/v1/chat/completions`, its state polled, and its output and error files
(`{custom_id, response: {status_code, body}, error}` lines) read back; `find` pages the batch list (newest first) for
a metadata value. vLLM's batch runner (`vllm run-batch`) reads
and writes the same lines, and local_server.py serves the same endpoints on top of it."""

import json

from rewardmill.transforms.batch.provider import BatchResult, BatchState

ENDPOINT = "/v1/chat/completions"


class OpenAIBatchProvider:
    name = "openai"
    page_size = 100  # batches per list page (the API's most)

    def __init__(self, base_url: str, api_key: str, timeout: float):
        import openai

        self._client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=2)

    def line(self, custom_id: str, body: dict) -> dict:
        return {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}

    def submit(self, lines: list[dict], window: str, metadata: dict[str, str]) -> str:
        data = "".join(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n" for line in lines).encode()
        uploaded = self._client.files.create(file=("batch.jsonl", data), purpose="batch")
        batch = self._client.batches.create(
            input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window=window, metadata=metadata
        )
        return batch.id

    def state(self, batch_id: str) -> BatchState:
        import openai

        try:
            batch = self._client.batches.retrieve(batch_id)
        except openai.NotFoundError:  # the provider forgot it (a restarted local server): its requests go again
            return BatchState(batch_id, "cancelled", errors=("the provider no longer knows this batch",))
        counts = batch.request_counts
        errors = tuple(
            f"{e.code}: {e.message}" for e in ((batch.errors.data or []) if batch.errors is not None else [])
        )
        return BatchState(
            batch.id,
            batch.status,
            batch.output_file_id,
            batch.error_file_id,
            {"total": counts.total, "completed": counts.completed, "failed": counts.failed} if counts else {},
            errors,
        )

    def find(self, key: str, value: str, since: float) -> str | None:
        # the list is newest first; a minute's slack for the provider's clock against ours
        for batch in self._client.batches.list(limit=self.page_size):
            if (batch.metadata or {}).get(key) == value:
                return batch.id
            if batch.created_at < since - 60:
                return None
        return None

    def results(self, state: BatchState) -> list[BatchResult]:
        out = []
        for file_id in (state.output_file, state.error_file):
            if file_id:
                text = self._client.files.content(file_id).text
                out += [parse_result(json.loads(line)) for line in text.splitlines() if line.strip()]
        return out


def parse_result(item: dict) -> BatchResult:
    """One output or error file line -> BatchResult: a 2xx response's body, else the error it carries."""
    response, error = item.get("response") or {}, item.get("error")
    status = response.get("status_code")
    if error is None and status is not None and 200 <= status < 300 and isinstance(response.get("body"), dict):
        return BatchResult(item["custom_id"], response["body"])
    if isinstance(error, dict):
        why = f"{error.get('code') or 'error'}: {error.get('message') or ''}".strip()
    elif error:
        why = str(error)
    else:
        body = response.get("body")
        message = body.get("error", {}).get("message") if isinstance(body, dict) else None
        why = f"status {status}: {message or body}"
    return BatchResult(item["custom_id"], None, why[:500])
