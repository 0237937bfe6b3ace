"""The viewer in a real browser: headless Chromium through Selenium, against a
real daemon. Skipped only where Chromium or its driver is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.ui import browser
from tests.ui.conftest import HIT_TURN, PROJECT, SESSION, WORD, Viewer

pytestmark = pytest.mark.skipif(browser.missing() is not None, reason=browser.missing() or "")

WAIT_S = 30


@pytest.fixture
def driver() -> Iterator[Any]:
    with browser.chromium() as drv:
        yield drv


def _wait(drv: Any, what: str, cond: Any) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(drv, WAIT_S, poll_frequency=0.05).until(cond, f"waiting for {what}")


def _css(drv: Any, selector: str) -> Any:
    from selenium.webdriver.common.by import By

    return drv.find_element(By.CSS_SELECTOR, selector)


def test_search_as_you_type_then_open_the_hit_then_copy_its_resume_command(
    viewer: Viewer, driver: Any
) -> None:
    from selenium.webdriver.common.by import By

    driver.get(viewer.url)
    assert "token=" not in driver.current_url  # moved into the cookie
    box = _css(driver, "#q")
    box.send_keys(WORD[:5])  # no Enter: results follow the typing, half a word included
    half = f'.results[data-q="{WORD[:5]}"] .hit'
    _wait(driver, "results for half a word", lambda d: d.find_elements(By.CSS_SELECTOR, half))
    box.send_keys(WORD[5:])
    found = f'.results[data-q="{WORD}"] .hit'
    _wait(driver, "results for the typed word", lambda d: d.find_elements(By.CSS_SELECTOR, found))
    hit = _css(driver, ".hit")
    assert _css(driver, ".hit mark").text == WORD
    assert driver.current_url.endswith(f"/?q={WORD}")  # the address follows the query

    hit.find_element(By.CSS_SELECTOR, "a.open").click()
    _wait(driver, "the reader", lambda d: d.find_elements(By.ID, "hit"))
    target = _css(driver, "#hit")
    assert WORD in target.text and f"#{HIT_TURN}" in target.text
    in_view = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return r.top >= 0 && r.top < window.innerHeight;",
        target,
    )
    assert in_view, "the reader did not scroll to the hit"
    neighbours = driver.find_elements(By.CSS_SELECTOR, "article.turn")
    assert len(neighbours) > 10

    button = _css(driver, "main > .resume button.copy")
    button.click()
    _wait(driver, "the copy to finish", lambda d: button.get_attribute("data-copied"))
    assert button.get_attribute("data-copied") == "yes"
    copied = driver.execute_async_script(
        "const done = arguments[0];"
        "navigator.clipboard.readText().then(done, e => done('read failed: ' + e));"
    )
    assert copied == f"cd {PROJECT} && claude --resume {SESSION}"


def test_a_page_opened_with_a_query_paints_searching_then_shows_the_hits(
    viewer: Viewer, driver: Any
) -> None:
    from selenium.webdriver.common.by import By

    driver.get(viewer.url)
    driver.get(f"http://127.0.0.1:{viewer.port}/?q={WORD}&role=user")
    found = f'#results > .results[data-q="{WORD}"] .hit'
    _wait(driver, "the opening query's hits", lambda d: d.find_elements(By.CSS_SELECTOR, found))
    assert driver.find_elements(By.CSS_SELECTOR, "[data-pending]") == []  # the placeholder is gone
    assert _css(driver, ".hit mark").text == WORD
    assert _css(driver, "#q").get_attribute("value") == WORD
    assert driver.current_url.endswith(f"/?q={WORD}&role=user")  # no render=1: the script ran
    fetched = driver.execute_script(
        "return performance.getEntriesByType('resource')"
        ".filter(r => r.name.includes('/results?')).map(r => r.name);"
    )
    assert len(fetched) == 1, fetched  # the script took the preloaded answer, not a second one
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert errors == []


def test_without_javascript_a_query_page_still_shows_the_hits(viewer: Viewer) -> None:
    from selenium.webdriver.common.by import By

    with browser.chromium(scripts=False) as drv:
        drv.get(viewer.url)
        drv.get(f"http://127.0.0.1:{viewer.port}/?q={WORD}")
        found = f'#results > .results[data-q="{WORD}"] .hit'
        _wait(drv, "the server-rendered hits", lambda d: d.find_elements(By.CSS_SELECTOR, found))
        assert "render=1" in drv.current_url  # the <noscript> refresh asked for them
        assert _css(drv, ".hit mark").text == WORD
        box = _css(drv, "#q")
        box.clear()
        box.send_keys("parser")
        _css(drv, "#search button[type=submit]").click()  # the form, without a script
        done = '#results > .results[data-q="parser"] .hit'
        _wait(drv, "the submitted search", lambda d: d.find_elements(By.CSS_SELECTOR, done))


def test_the_browser_without_the_token_gets_the_refusal_page(viewer: Viewer, driver: Any) -> None:
    driver.get(f"http://127.0.0.1:{viewer.port}/sessions")
    assert "Open the link backscroll printed" in _css(driver, "h1").text
    driver.get(viewer.url)
    driver.get(f"http://127.0.0.1:{viewer.port}/sessions")  # the cookie now opens it
    assert _css(driver, "nav a[aria-current]").text == "Sessions"


def test_index_now_posts_with_the_csrf_token_and_a_forged_form_is_refused(
    viewer: Viewer, driver: Any
) -> None:
    driver.get(viewer.url.replace("/?", "/health?"))
    _css(driver, "#sync").click()
    _wait(driver, "the sync result", lambda d: "Indexed now" in d.page_source)
    driver.execute_script("document.querySelector('input[name=csrf]').value = 'forged';")
    _css(driver, "#sync").click()
    _wait(driver, "the refusal", lambda d: "CSRF" in d.page_source)


def test_every_page_renders_without_a_script_error(viewer: Viewer, driver: Any) -> None:
    driver.get(viewer.url)
    for path in ("/?q=parser", "/sessions", "/activity?until=2026-02-20", "/health",
                 f"/session?id={SESSION}"):  # fmt: skip
        driver.get(f"http://127.0.0.1:{viewer.port}{path}")
        _css(driver, "main")
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert errors == [], f"{path}: {errors}"
