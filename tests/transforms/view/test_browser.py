"""The viewer in a real headless Chromium: filters through DOM events, rows read back from the DOM, row text that
holds HTML shown as text, screenshots in tmp_path. Fails (never skips) without Chromium: see webdriver.py."""

from pathlib import Path

import pytest

from rewardmill.transforms.view.page import view_page
from tests.transforms.validation.conftest import PAIRS, answer, pair_row, write_process_rewards, write_project
from tests.transforms.view import webdriver
from tests.transforms.view.webdriver import headless_chromium

pytestmark = pytest.mark.browser

HOSTILE = '<img src=x onerror="window.pwned=1"></script><script>window.pwned=2</script> 7 is wrong'
ODD = pair_row(3, pair_type="correct_vs_incorrect", rejected=answer(HOSTILE))
FIRST_THREE = sorted(r["pair_id"] for r in [*PAIRS, ODD])[:3]  # what --max-rows 3 keeps: the first in id order

VISIBLE_IDS = "return [...document.querySelectorAll('#rows .row')].map(e => e.dataset.id)"
COUNT = "return document.getElementById('count').textContent"
CLEAR_SEARCH = "const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input'))"


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """The page of validation's tiny project (pairs, prm, rl, sft, rejects, math_answer labels) plus one odd pair."""
    root = tmp_path_factory.mktemp("view")
    write_project(root, pairs=[*PAIRS, ODD])
    write_process_rewards(root)
    path = root / "view.html"
    path.write_text(view_page(root / "data/datasets", labels=root / "data/labels", max_rows=3), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module (starting one takes a second or two)."""
    with headless_chromium() as session:
        yield session


def test_filters_and_search(page, browser, tmp_path):
    assert PAIRS[1]["pair_id"] not in FIRST_THREE and ODD["pair_id"] in FIRST_THREE  # the ids this test relies on
    browser.open(page)
    assert browser.script(COUNT) == "Showing 3 of 3 rows"
    assert browser.script(VISIBLE_IDS) == FIRST_THREE
    left_out = browser.script("return document.getElementById('left-out').textContent")
    assert "1 of 4 rows of pairs are not in this page" in left_out
    overview = browser.script("return [...document.querySelectorAll('#overview tr')].map(r => r.textContent)")
    assert overview[1:3] == ["pairspair_v2432", "prmprm_v1331"]  # config, schema, rows, in this page, rejected
    options = browser.script("return [...document.querySelectorAll('#pair_type option')].map(o => o.value)")
    assert options == ["", "best_vs_worst", "correct_vs_incorrect"]

    browser.click("#pair_type option[value='best_vs_worst']")  # a real click: the select fires `change`
    expected = [i for i in FIRST_THREE if i != ODD["pair_id"]]
    assert browser.script(VISIBLE_IDS) == expected and browser.script(COUNT) == "Showing 2 of 3 rows"
    browser.click("#pair_type option[value='']")

    browser.type("#search", "WRONG 0")  # typed key by key: `input` events
    assert browser.script(VISIBLE_IDS) == [PAIRS[0]["pair_id"]] and browser.script(COUNT) == "Showing 1 of 3 rows"
    verdicts = (
        "return [...document.querySelectorAll('.side.rejected .labels td:nth-child(3)')].map(e => e.textContent)"
    )
    assert browser.script(verdicts) == ["incorrect"]  # the rejected rollout's math_answer label, from data/labels
    browser.screenshot(tmp_path / "pairs.png")

    browser.script(CLEAR_SEARCH)
    browser.click("#config option[value='prm']")
    # steps coloured by label: rollout 0 all good (mc); rollout 1 wrong at its last step (mc and judge)
    steps = browser.script("return [...document.querySelectorAll('#rows .step')].map(e => e.className)")
    assert sorted(steps) == ["step bad first-error"] * 2 + ["step good"] * 7
    assert browser.script("return document.getElementById('pair_type-filter').className") == "hidden"
    browser.screenshot(tmp_path / "prm.png")

    browser.click("#config option[value=':rejects']")
    assert browser.script(COUNT) == "Showing 5 of 5 reject reasons"
    assert (tmp_path / "pairs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_html_in_a_completion_is_shown_as_text(page, browser, tmp_path):
    browser.open(page)
    browser.type("#search", "onerror")
    assert browser.script(VISIBLE_IDS) == [ODD["pair_id"]]
    texts = browser.script("return [...document.querySelectorAll('#rows .side.rejected pre')].map(e => e.textContent)")
    assert texts == [HOSTILE]  # literally, as the policy wrote it
    assert browser.script("return [document.querySelectorAll('#rows img').length, window.pwned === undefined]") == [
        0,
        True,
    ]
    assert browser.script("return document.querySelectorAll('script').length") == 2  # none injected
    browser.screenshot(tmp_path / "hostile.png")


def test_missing_chromium_fails_saying_how_to_install(monkeypatch):
    monkeypatch.setattr(webdriver.shutil, "which", lambda name: None)
    with pytest.raises(pytest.fail.Exception, match=r"chromedriver and chromium not found: .*apt-get install -y"):
        webdriver.find_tools()


def test_a_trajectory_shows_as_a_chat(browser, tmp_path, params_file):
    """Multi-turn datasets (pair_v3, sft_v2) built by label and assemble from trajectories: each message in its role,
    reasoning collapsed, tool calls and tool results with their tool and call id, the `turns` labeler's label on
    each assistant turn."""
    from tests.pipelines.test_assemble_turns import build_datasets, params_for, write_trajectories

    params_file(params_for())
    labels, out = build_datasets(tmp_path, write_trajectories(tmp_path))
    page = tmp_path / "view.html"
    page.write_text(view_page(out, labels=labels), encoding="utf-8")
    browser.open(page)
    browser.click("#config option[value='pairs']")
    chosen = "#rows .side.chosen .msg"
    roles = browser.script(f"return [...document.querySelectorAll('{chosen}')].map(e => e.dataset.role)")
    assert roles == ["assistant", "user", "assistant"]
    tags = browser.script(f"return [...document.querySelectorAll('{chosen} .turn-tag')].map(e => e.textContent)")
    assert tags == ["bad turn · incorrect", "good turn · correct"]  # the first attempt was wrong, the second right
    reasoning = browser.script(f"return [...document.querySelectorAll('{chosen} details')].map(d => [d.open, "
                               "d.textContent])")  # fmt: skip
    assert reasoning == [[False, "reasoning2 + 2 = 4"]]  # collapsed until clicked
    browser.screenshot(tmp_path / "chat-pair.png")

    browser.click("#config option[value='sft']")
    browser.type("#search", "print(2+2)")
    heads = browser.script("return [...document.querySelectorAll('#rows .msg .role')].map(e => e.textContent)")
    assert heads[-3:] == ["assistantgood turn", "tool · python [call_0_0]", "assistantgood turn · correct"]
    calls = browser.script("return [...document.querySelectorAll('#rows pre.tool-call')].map(e => e.textContent)")
    assert calls == ['→ python [call_0_0]\n{"code": "print(2+2)"}']
    browser.screenshot(tmp_path / "chat-sft.png")
