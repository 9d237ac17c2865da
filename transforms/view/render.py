"""Render the viewer's page model (model.py) as one static, offline HTML page. Pure.

The template, its CSS and its JS ship beside this module (page.html, page.css, page.js) and are inlined: the page
loads nothing, so it opens from disk, from a Hub download or from an air-gapped machine alike. The data goes in a
`<script type="application/json">` block with `<`, `>`, `&` and the JS line separators escaped, so no text in a row
can end the block; the JS parses it and builds every element with `textContent` (never `innerHTML`), so a completion
holding HTML shows as text. Same model, same bytes: JSON keys are sorted and nothing depends on time.
"""

import html
import json
import re
from importlib import resources
from typing import Any

PACKAGE = "rewardmill.transforms.view"
PLACEHOLDER = re.compile(r"\{\{(title|style|script|data)\}\}")
_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def asset(name: str) -> str:
    return resources.files(PACKAGE).joinpath(name).read_text(encoding="utf-8")


def embed_json(obj: Any) -> str:
    """JSON that is safe inside a <script> element: no `<` at all, so never `</script>` or `<!--`."""
    data = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return re.sub("[<>&\u2028\u2029]", lambda m: _ESCAPES[m.group()], data)


def render_html(model: dict[str, Any]) -> str:
    style, script = asset("page.css"), asset("page.js")
    for name, code, end in (("page.css", style, "</style"), ("page.js", script, "</script")):
        if end in code.lower():
            raise ValueError(f"{name} must not contain {end}>: it would end its inline element")
    parts = {"title": html.escape(model["title"]), "style": style, "script": script, "data": embed_json(model)}
    # one pass: text inserted for one placeholder is never searched for another
    return PLACEHOLDER.sub(lambda m: parts[m.group(1)], asset("page.html"))
