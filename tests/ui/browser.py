"""Headless Chromium driven by Selenium through the system chromedriver.

Debian's ``chromium`` and ``chromium-driver`` packages (installed by .ci/run);
never a downloaded browser: Selenium Manager is bypassed by naming both binaries.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def binaries() -> tuple[str | None, str | None]:
    browser = next((p for p in map(shutil.which, BROWSERS) if p), None)
    return browser, shutil.which("chromedriver")


def missing() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    browser, driver = binaries()
    if browser is None or driver is None:
        return ("needs Debian's chromium and chromium-driver (`apt-get install chromium "
                "chromium-driver`; .ci/run installs them)")  # fmt: skip
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "needs selenium (`pip install -e '.[test]'`)"
    return None


@contextmanager
def chromium(width: int = 1280, height: int = 900, scripts: bool = True) -> Iterator[Any]:
    """A headless Chromium; ``scripts=False`` turns JavaScript off (the no-script path)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = binaries()
    assert browser and driver, missing()
    profile = tempfile.mkdtemp(prefix="bs-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-extensions",
                f"--user-data-dir={profile}", f"--window-size={width},{height}"):  # fmt: skip
        opts.add_argument(arg)
    if not scripts:
        opts.add_experimental_option(
            "prefs", {"profile.managed_default_content_settings.javascript": 2}
        )
    env = {"SE_OFFLINE": "true"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    drv = None
    try:
        drv = webdriver.Chrome(service=Service(driver), options=opts)
        drv.set_page_load_timeout(60)
        drv.execute_cdp_cmd(
            "Browser.grantPermissions",
            {"permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]},
        )
        yield drv
    finally:
        if drv is not None:
            drv.quit()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(profile, ignore_errors=True)
