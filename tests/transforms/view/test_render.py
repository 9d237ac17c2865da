"""The page: one offline HTML file whose data block no row text can close, built with textContent only."""

import json
import re

import pytest

from rewardmill.transforms.view.model import ConfigRows, Source, page_model
from rewardmill.transforms.view.render import asset, embed_json, render_html
from tests.transforms.validation.rows import answer, pair_row

DATA_BLOCK = re.compile(r'<script type="application/json" id="data">(.*?)</script>', re.S)
HOSTILE = [
    "</script><script>alert(1)</script>",  # would end the data block and run
    "</SCRIPT >",  # end tags are case-insensitive
    "<!-- <script>",  # would switch the HTML parser into its script-escaped state
    "<b>bold</b> & <img src=x onerror=alert(1)>",  # HTML must show as text
    "line\u2028separator\u2029",  # JS line terminators
    "{{data}} {{script}}",  # the template's placeholders, inside a row
]


def page(*completions: str, title: str = "a <title> & more") -> tuple[str, dict]:
    rows = [pair_row(i, rejected=answer(text)) for i, text in enumerate(completions)]
    model = page_model(Source("datasets", title, "data/datasets", [ConfigRows("pairs", "pair_v2", 9, rows)]), 5)
    return render_html(model), model


@pytest.mark.parametrize("completion", HOSTILE)
def test_row_text_stays_data(completion):
    html, model = page(completion)
    blocks = DATA_BLOCK.findall(html)
    assert len(blocks) == 1 and json.loads(blocks[0]) == model  # the block ends where it should and parses back
    assert "<" not in blocks[0] and ">" not in blocks[0]  # nothing in the data can open or close a tag
    assert html.count("</script>") == 2  # the data block and the page's own script, nothing more
    assert "alert(1)</script>" not in html and "<b>bold" not in html and "<img" not in html


@pytest.mark.parametrize(
    "obj, expected",
    [
        ({"a": "</script>"}, '{"a":"\\u003c/script\\u003e"}'),
        ({"b": 1, "a": "x & y"}, '{"a":"x \\u0026 y","b":1}'),  # sorted keys, & escaped
        (["é", "\u2028"], '["é","\\u2028"]'),  # UTF-8 kept, line separators escaped
    ],
)
def test_embed_json(obj, expected):
    assert embed_json(obj) == expected
    assert json.loads(embed_json(obj)) == obj


def test_nan_cannot_reach_the_page():
    with pytest.raises(ValueError):
        embed_json({"x": float("nan")})  # page_model turns NaN into null; anything else is a bug, not bad JSON


def test_title_is_escaped_and_the_page_is_deterministic():
    html, _ = page("x")
    assert "<title>a &lt;title&gt; &amp; more</title>" in html
    assert page("x")[0] == html  # same model, same bytes
    assert "{{" not in html.replace(DATA_BLOCK.search(html).group(1), "")  # every placeholder filled


def test_page_loads_nothing_and_never_parses_row_text_as_html():
    code = asset("page.js")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in code, sink
    for part in (asset("page.html"), asset("page.css"), code):
        assert not re.search(r"https?://|src=|href=|@import|url\(|fetch\(|XMLHttpRequest", part)
