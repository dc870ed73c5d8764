"""Shared by the HTML report's browser tests: finding Chromium and its driver, starting it
headless, opening a report and reading what the page shows."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any


def chromium() -> tuple[str, str] | str:
    """(browser, driver) paths, or why the browser tests cannot run."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (make test-browser installs it)"
    browser = (
        os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    driver = os.environ.get("CHROMEDRIVER") or shutil.which("chromedriver")
    if not browser:
        return "Chromium is not installed (make test-browser: apt-get install chromium)"
    if not driver:
        return "chromedriver is not installed (make test-browser: apt-get install chromium-driver)"
    return browser, driver


FOUND = chromium()


def start_browser(width: int = 1400, height: int = 2400) -> Any:
    """Headless Chromium with the browser console and network logs kept."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert not isinstance(FOUND, str)
    options = webdriver.ChromeOptions()
    options.binary_location = FOUND[0]
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(options=options, service=Service(FOUND[1]))


def open_page(driver: Any, path: Path, seconds: float = 60.0) -> None:
    """Open ``path`` and wait until the page is drawn and has read all its texts."""
    driver.get(path.as_uri())
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if driver.execute_script(
            "return document.body.dataset.ready === '1' && document.body.dataset.texts === 'all'"
        ):
            return
        time.sleep(0.05)
    raise AssertionError(f"the page never finished drawing: {driver.get_log('browser')}")


def wait_for(driver: Any, script: str, seconds: float = 20.0) -> Any:
    """Poll ``script`` (a JS expression returned) until it is truthy; returns its value."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = driver.execute_script("return " + script)
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"never true: {script}")


def view(driver: Any) -> list[int]:
    """The segments of the table, in the table's order (filtered), drawn or not."""
    return [int(x) for x in driver.execute_script("return window.rbReport.view()")]


def drawn_rows(driver: Any) -> list[int]:
    """The segments whose rows are in the document (the drawn window)."""
    return [
        int(x)
        for x in driver.execute_script(
            "return Array.from(document.querySelectorAll('#seg-body tr.row'))"
            ".map(r => r.dataset.seg)"
        )
    ]


def console_problems(driver: Any) -> list[dict[str, Any]]:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def requested_urls(driver: Any, blocked: dict[str, str] | None = None) -> list[str]:
    """The URLs the page asked for since the log was last read; with ``blocked``, the ones
    the browser stopped (``Network.loadingFailed`` with a ``blockedReason``) go there instead."""
    urls: dict[str, str] = {}
    stopped: dict[str, str] = {}
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message["method"] == "Network.requestWillBeSent":
            urls[params["requestId"]] = params["request"]["url"]
        elif message["method"] == "Network.loadingFailed" and params.get("blockedReason"):
            stopped[params["requestId"]] = params["blockedReason"]
    if blocked is None:
        return list(urls.values())
    blocked.update({urls[k]: why for k, why in stopped.items() if k in urls})
    return [u for k, u in urls.items() if k not in stopped]


def outside_box(driver: Any, box: str, items: str) -> list[str]:
    """The elements ``items`` (CSS) inside ``box`` whose bounding box passes the box's right
    edge or the window's: columns that cannot be seen without scrolling."""
    return driver.execute_script(
        """
        const box = document.querySelector(arguments[0]).getBoundingClientRect();
        const right = Math.min(box.right, document.documentElement.clientWidth);
        return Array.from(document.querySelectorAll(arguments[1]))
          .filter(e => {
            const r = e.getBoundingClientRect();
            return r.width > 0 && r.right > right + 0.5;
          })
          .map(e => e.tagName + ' ' + (e.dataset.key || e.dataset.metric || e.textContent));
        """,
        box,
        items,
    )
