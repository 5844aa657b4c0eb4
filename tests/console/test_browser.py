"""The console in a real browser: Debian's headless Chromium driven by Selenium through /usr/bin/chromedriver.

Signs in, creates a rooftop and a key, edits a policy and sees the pre-flight refuse it, approves a waiting
workflow task, filters the audit log, checks accessibility basics (labels, focus order, contrast of the
default theme), and saves screenshots under docs/console/ (linked from docs/console.md and the README).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from console.conftest import OPERATOR_KEY
from forecourt.bootstrap import create_app
from gateway.support import TOYOTA, Template, base_settings

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "console"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

CONTRAST_JS = """
function lum(c) { const m = c.match(/\\d+(\\.\\d+)?/g).map(Number).slice(0, 3).map(v => v / 255)
  .map(v => v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4));
  return 0.2126*m[0] + 0.7152*m[1] + 0.0722*m[2]; }
function bg(el) {
  while (el) { const c = getComputedStyle(el).backgroundColor;
    if (c && !c.endsWith(', 0)') && c !== 'transparent') return c; el = el.parentElement; }
  return 'rgb(255,255,255)'; }
const out = [];
for (const el of document.querySelectorAll('body, a, button, label, th, td, h1, h2, p, .tile span')) {
  if (!el.offsetParent && el.tagName !== 'BODY') continue;
  const a = lum(getComputedStyle(el).color), b = lum(bg(el));
  out.push([el.tagName + '.' + el.className, (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)]);
}
return out;
"""
UNLABELLED_JS = """
return Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea'))
  .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')).map(el => el.name || el.id);
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium from Debian's packages (fails in CI when missing, skips with a reason elsewhere)."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()) or shutil.which("chromedriver") is None:
        if IN_CI:
            pytest.fail("chromium and chromium-driver are required in CI (scripts/system-packages.txt)")
        pytest.skip("chromium/chromedriver not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1280,900",
        "--disable-dev-shm-usage",
    ):
        options.add_argument(flag)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SE_OFFLINE", "true")  # Selenium Manager must never fetch a browser or a driver
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def server(console_template: Template, tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """The app on a private database copy, served by uvicorn on a free loopback port."""
    port = _free_port()
    db = console_template.copy_to(tmp_path)
    settings = base_settings(
        db, console_operator_key=OPERATOR_KEY, public_base_url=f"http://127.0.0.1:{port}", allow_private_targets=True
    )
    app = create_app(settings)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert thread.is_alive(), "the server stopped"
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    try:
        yield base, console_template.keys
    finally:
        srv.should_exit = True
        thread.join(timeout=15)


def _start_waiting_workflow(base: str, key: str) -> None:
    """A new-lead follow-up run that stops at its user task (through the REST envelope, as an agent would)."""

    async def run() -> None:
        async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {key}"}) as http:
            leads = await http.post(
                "/mcp/leads.list", json={"id": "1", "payload": {"dealership_id": TOYOTA, "limit": 1}}
            )
            lead_id = leads.json()["result"]["output"]["items"][0]["id"]
            body = {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead_id}}
            started = await http.post("/mcp/workflow.run", json={"id": "2", "payload": body})
            assert started.json()["result"]["output"]["status"] == "input_required", started.text

    asyncio.run(run())


def _until(driver: Any, css: str, text: str) -> Any:
    """The first element matching ``css`` once its text contains ``text`` (after a navigation)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def found(d: Any) -> Any:
        try:
            el = d.find_element(By.CSS_SELECTOR, css)
            return el if text in el.text else False
        except (StaleElementReferenceException, Exception):
            return False

    return WebDriverWait(driver, 15, ignored_exceptions=(StaleElementReferenceException,)).until(found)


def _shot(driver: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / f"{name}.png"))


def _a11y(driver: Any) -> None:
    assert driver.execute_script(UNLABELLED_JS) == [], "every form control has a label"
    worst = min(driver.execute_script(CONTRAST_JS), key=lambda pair: pair[1])
    assert worst[1] >= 4.5, f"contrast below WCAG AA: {worst}"


def test_console_in_a_real_browser(browser: Any, server: tuple[str, dict[str, str]]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    base, keys = server
    _start_waiting_workflow(base, keys["crm"])
    d = browser
    d.get(f"{base}/console/")
    assert d.current_url.endswith("/console/signin")
    _a11y(d)
    # Focus order: the skip link first, then the key field, then its button.
    body = d.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.TAB)
    assert d.switch_to.active_element.get_attribute("class") == "skip"
    d.switch_to.active_element.send_keys(Keys.TAB)
    assert d.switch_to.active_element.get_attribute("id") == "api_key"
    d.switch_to.active_element.send_keys(keys["admin"], Keys.TAB)
    assert d.switch_to.active_element.text == "Sign in"
    _shot(d, "signin")
    d.switch_to.active_element.click()
    _until(d, "h1", "Overview")
    _a11y(d)
    _shot(d, "overview")

    d.get(f"{base}/console/tenants")
    d.find_element(By.ID, "d_id").send_keys("demo-browser-rooftop")
    d.find_element(By.ID, "d_name").send_keys("Browser Motors")
    d.find_element(By.ID, "d_name").submit()
    _until(d, ".flash", "Rooftop demo-browser-rooftop saved.")
    d.find_element(By.ID, "k_name").send_keys("browser key")
    d.find_element(By.ID, "k_name").submit()
    _until(d, "h1", "Key created")
    assert d.find_element(By.ID, "new_key").get_attribute("value").startswith("fck_")
    _shot(d, "key-created")
    d.get(f"{base}/console/tenants")
    _a11y(d)
    _shot(d, "tenants")

    d.get(f"{base}/console/policies")
    redact = d.find_element(By.ID, "redact-1")
    redact.clear()
    redact.send_keys("vin")
    d.find_element(By.CSS_SELECTOR, "form.policy button[value=save]").click()
    _until(d, "#preflight-title", "Pre-flight refused this change")
    _a11y(d)
    _shot(d, "policy-preflight-refused")

    d.get(f"{base}/console/approvals")
    card = d.find_element(By.CSS_SELECTOR, "form[action$='/approvals/task']")
    card.find_element(By.TAG_NAME, "textarea").send_keys("Called the customer back.")
    _shot(d, "approvals")
    card.find_element(By.CSS_SELECTOR, "button[value=approve]").click()
    _until(d, ".flash", "Task completed")

    d.get(f"{base}/console/audit?action=admin.*&surface=console")
    rows = d.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert rows
    assert all("admin." in r.text for r in rows)
    _a11y(d)
    _shot(d, "audit")

    d.get(f"{base}/console/tools?member_id=shopper-agent")
    assert "tokens" in d.find_element(By.TAG_NAME, "main").text
    _shot(d, "tools")
    d.get(f"{base}/console/inventory")
    feed = SHOTS.parent.parent / "tests" / "fixtures" / "feeds" / "bad_rows.csv"
    upload = d.find_element(By.CSS_SELECTOR, "form[data-upload]")
    upload.find_element(By.CSS_SELECTOR, "input[type=file]").send_keys(str(feed.resolve()))
    upload.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _until(d, "form[data-upload] .progress-text", "Import finished")
    report = _until(d, "form[data-upload] .report", "Import report")
    assert "invalid_vin" in report.text
    assert upload.find_element(By.TAG_NAME, "progress").get_attribute("value") == "100"
    _a11y(d)
    _shot(d, "inventory-import")
    d.set_window_size(820, 1100)  # tablet width
    d.get(f"{base}/console/inventory")
    _shot(d, "inventory-tablet")
