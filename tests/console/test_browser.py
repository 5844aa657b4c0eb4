"""The console in a real browser: Debian's headless Chromium driven by Selenium through /usr/bin/chromedriver.

Signs in, creates a rooftop and a key, edits a policy and sees the pre-flight refuse it, approves a waiting
workflow task, filters the audit log, checks accessibility basics (labels, focus order, contrast of the
default theme), and with FORECOURT_UPDATE_SCREENSHOTS=1 saves screenshots under docs/console/ (linked from
docs/console.md and the README).
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
from gateway.support import BAY, MOTOR, TOYOTA, Template, base_settings

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "console"
# The screenshots of docs/console.md are rewritten only when asked, so a test run never changes the repository's files.
UPDATE_SHOTS = os.environ.get("FORECOURT_UPDATE_SCREENSHOTS") == "1"
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
    if not UPDATE_SHOTS:
        return
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
    assert not d.find_element(By.ID, "d_id").is_displayed()  # forms open on demand
    d.find_element(By.CSS_SELECTOR, "#add-rooftop > summary").click()
    d.find_element(By.ID, "d_id").send_keys("demo-browser-rooftop")
    d.find_element(By.ID, "d_name").send_keys("Browser Motors")
    d.find_element(By.ID, "d_name").submit()
    _until(d, ".flash", "Rooftop demo-browser-rooftop saved.")
    d.find_element(By.CSS_SELECTOR, "#create-key > summary").click()
    d.find_element(By.ID, "k_member").send_keys("crm-agent")
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
    d.find_element(By.CSS_SELECTOR, f"a[href$='/inventory/{TOYOTA}/upload']").click()
    _until(d, "h1", "Upload a feed to")
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


def _seed_group(base: str, key: str, rooftops: int) -> None:
    """More rooftops than a page holds (through the admin API, as an IT team would script it)."""

    async def run() -> None:
        async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {key}"}) as http:
            for n in range(rooftops):
                body = {"name": f"Group Rooftop {n:03d}", "timezone": "America/Chicago"}
                put = await http.put(f"/admin/v1/companies/{MOTOR}/dealerships/grp-{n:03d}", json=body)
                assert put.status_code < 300, put.text

    asyncio.run(run())


def _hold_a_call(base: str, keys: dict[str, str]) -> str:
    """A policy that holds ``leads.update`` to lost, and an agent's call held by it; answers the lead id."""

    async def run() -> str:
        admin = {"Authorization": f"Bearer {keys['admin']}"}
        crm = {"Authorization": f"Bearer {keys['crm']}"}
        async with httpx.AsyncClient(base_url=base) as http:
            rule = {"action": "leads.update", "field": "status", "op": "eq", "value": "lost"}
            url = f"/admin/v1/companies/{MOTOR}/policies/{MOTOR}-default"
            await http.put(url, json={"require_approval": [rule]}, headers=admin)
            listed = await http.post(
                "/mcp/leads.list", json={"id": "1", "payload": {"dealership_id": TOYOTA, "limit": 5}}, headers=crm
            )
            items = listed.json()["result"]["output"]["items"]
            lead_id: str = next(i["id"] for i in items if i["status"] in ("new", "contacted"))
            body = {"dealership_id": TOYOTA, "lead_id": lead_id, "status": "lost"}
            held = await http.post("/mcp/leads.update", json={"id": "2", "payload": body}, headers=crm)
            assert "approval.pending" in held.text, held.text
            return lead_id

    return asyncio.run(run())


def test_the_console_at_group_size_in_a_real_browser(
    browser: Any, server: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    """Tables paged and searched on the server, the company picker, a refused form keeping its input, approvals
    that show what they approve, and the try-a-tool panel: in Chromium, with screenshots for docs/console.md."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base, keys = server
    _seed_group(base, keys["admin"], 40)
    lead_id = _hold_a_call(base, keys)
    d = browser
    d.set_window_size(1280, 900)
    d.get(f"{base}/console/signin")
    d.find_element(By.ID, "api_key").send_keys(OPERATOR_KEY)
    d.find_element(By.ID, "api_key").submit()
    _until(d, "h1", "Overview")

    # The company picker lists the companies; an unknown id (a crafted post) is refused with a message.
    picker = Select(d.find_element(By.ID, "company_id"))
    assert {o.get_attribute("value") for o in picker.options} >= {MOTOR, BAY}
    picker.select_by_value(MOTOR)
    d.find_element(By.CSS_SELECTOR, "form[action$='/company'] button").click()
    _until(d, ".flash", f"Now viewing {MOTOR}")
    d.execute_script(
        "const s = document.getElementById('company_id'); const o = document.createElement('option');"
        "o.value = 'no-such-group'; o.text = 'x'; s.add(o); s.value = 'no-such-group';"
    )
    d.find_element(By.CSS_SELECTOR, "form[action$='/company'] button").click()
    _until(d, ".error", "There is no company 'no-such-group'")
    _a11y(d)
    _shot(d, "company-picker-refused")

    # Rooftops: 25 a page, a search, a sort header and the pager.
    d.get(f"{base}/console/tenants")
    assert "1-25 of 42" in d.find_element(By.CSS_SELECTOR, "nav[aria-label='Rooftops pages']").text
    d.find_element(By.ID, "s-r_q").send_keys("Group Rooftop 03")
    d.find_element(By.ID, "s-r_q").submit()
    _until(d, "nav[aria-label='Rooftops pages']", "1-10 of 10")
    d.find_element(By.LINK_TEXT, "id").click()
    _until(d, "nav[aria-label='Rooftops pages']", "1-10 of 10")
    d.find_element(By.LINK_TEXT, "id ▲").click()
    first = _until(d, "table tbody tr td code", "grp-039")
    assert first.text == "grp-039"
    _a11y(d)
    _shot(d, "tenants-search")

    # A refused form opens again with what was typed and the refusal as the page's own message.
    d.get(f"{base}/console/tenants")
    d.find_element(By.CSS_SELECTOR, "#add-member > summary").click()
    d.find_element(By.ID, "m_id").send_keys("Not A Slug")
    d.find_element(By.ID, "m_name").send_keys("Typed Name")
    d.find_element(By.ID, "m_id").submit()
    _until(d, ".error", "A member id is lower-case letters")
    assert d.find_element(By.ID, "m_id").get_attribute("value") == "Not A Slug"
    assert d.find_element(By.ID, "m_name").get_attribute("value") == "Typed Name"
    assert d.find_element(By.ID, "m_id").is_displayed()
    _shot(d, "form-kept-on-error")

    # Leads: the company's, one page, filtered by status.
    d.get(f"{base}/console/leads")
    Select(d.find_element(By.ID, "s-status")).select_by_visible_text("new")
    d.find_element(By.ID, "s-q").submit()
    _until(d, "nav[aria-label='Leads pages']", "of")
    statuses = {r.find_elements(By.TAG_NAME, "td")[5].text for r in d.find_elements(By.CSS_SELECTOR, "tbody tr")}
    assert statuses == {"new"}
    _a11y(d)
    d.execute_script("window.scrollTo(0, 180)")
    _shot(d, "leads")

    # Approvals: the held call with its arguments, rooftop and the lead it touches.
    d.get(f"{base}/console/approvals?status=pending")
    row = _until(d, "table tbody tr", "leads.update")
    assert TOYOTA in row.text
    assert f"lead {lead_id}" in row.text
    assert '"status": "lost"' in row.text
    _a11y(d)
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
    _shot(d, "approvals-held")

    # Try a tool as a member: the answer and its audit record.
    d.get(f"{base}/console/tools?member_id=crm-agent")
    d.find_element(By.CSS_SELECTOR, "#try > summary").click()
    d.find_element(By.ID, "try_tool").send_keys("inventory.search")
    args = d.find_element(By.ID, "try_args")
    args.clear()
    args.send_keys(f'{{"dealership_id": "{TOYOTA}", "limit": 2}}')
    d.find_element(By.CSS_SELECTOR, "form[action$='/tools/try'] button").click()
    tried = _until(d, "#tried", "inventory.search as crm-agent: answered")
    assert '"surface": "console"' in tried.text
    _a11y(d)
    d.execute_script("arguments[0].scrollIntoView()", tried)
    _shot(d, "try-a-tool")

    # Inventory: a page of rooftops, each rooftop's upload on its own page.
    d.get(f"{base}/console/inventory")
    assert len(d.find_elements(By.CSS_SELECTOR, "form[data-upload]")) == 0
    assert "1-25 of 42" in d.find_element(By.CSS_SELECTOR, "nav[aria-label='Rooftops pages']").text
    _shot(d, "inventory")

    # A feed over 1 MiB goes up with the progress bar and is imported (it was refused at 1 MiB).
    from forecourt.domain.vin import with_check_digit

    rows = ["vin,stock,year,make,model,trim,condition,price,mileage,status,description"]
    padding = "x" * 400
    rows += [
        f"{with_check_digit(f'4T1DAACK0SU{n:06d}')},P{n},2025,Toyota,Camry,LE,used,24995,{1000 + n},available,{padding}"
        for n in range(3_000)
    ]
    big = tmp_path / "big-feed.csv"
    big.write_text("\n".join(rows) + "\n")
    assert big.stat().st_size > 1_048_576
    d.find_element(By.CSS_SELECTOR, f"a[href$='/inventory/{TOYOTA}/upload']").click()
    _until(d, "h1", "Upload a feed to")
    upload = d.find_element(By.CSS_SELECTOR, "form[data-upload]")
    upload.find_element(By.CSS_SELECTOR, "input[type=file]").send_keys(str(big))
    upload.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _until(d, "form[data-upload] .progress-text", "Import finished")
    assert "3000 rows: 3000 created" in _until(d, "form[data-upload] .report", "Import report").text
