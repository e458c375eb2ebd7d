"""The web calculator end to end in a real headless browser: ``warpspeed
serve`` in a subprocess on a free port, Debian's chromium driven by Selenium
through ``/usr/bin/chromedriver`` (no browser download, Selenium Manager is
never asked). The test enters a kernel by hand, checks that the page shows
``ws.predict``'s numbers exactly, that hostile input is rejected next to its
field while the server keeps serving, that the link restores the page, and
ranks the design space.

It takes the README's screenshot: into ``notebooks/figures/web_calculator.png``
when that file is missing or ``WARPSPEED_UPDATE_SCREENSHOT=1``, else into a
temporary directory (so that a test run leaves the work tree clean).

Skipped, with the reason, where no browser (or Panel, or Selenium) is installed.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

import warpspeed as ws
from warpspeed.web.state import Form

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "notebooks" / "figures" / "web_calculator.png"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
#: A browser session: .ci/run runs it under its main Python only.
pytestmark = pytest.mark.slow

pytest.importorskip("panel", reason="the web extra is not installed (pip install -e '.[web]')")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
    pytest.skip("no browser: apt-get install chromium chromium-driver (.ci/run tries)",
                allow_module_level=True)

from selenium.common.exceptions import (  # noqa: E402
    StaleElementReferenceException,
    WebDriverException,
)
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402

#: Elements by CSS selector, searching every shadow root (Bokeh renders in them);
#: ``"A >>> B"``: elements B inside (the shadow tree of) elements A.
DEEP = """
function deep(root, sel, out) {
  root.querySelectorAll(sel).forEach(e => out.push(e));
  root.querySelectorAll('*').forEach(e => { if (e.shadowRoot) deep(e.shadowRoot, sel, out); });
  return out;
}
let roots = [document];
for (const sel of arguments[0].split(' >>> ')) {
  roots = roots.flatMap(r => deep(r.shadowRoot || r, sel, []));
}
return roots;
"""

FIELDS = "src 260,132,68 8\ndst 260,132,68 8"
LOADS = [
    "src[tidx + 2, tidy + 2, tidz + 2]",
    "src[tidx + 1, tidy + 2, tidz + 2]",
    "src[tidx + 3, tidy + 2, tidz + 2]",
    "src[tidx + 2, tidy + 1, tidz + 2]",
    "src[tidx + 2, tidy + 3, tidz + 2]",
    "src[tidx + 2, tidy + 2, tidz + 1]",
    "src[tidx + 2, tidy + 2, tidz + 3]",
]
STORE = "dst[threadIdx.x + blockIdx.x*blockDim.x + 2, tidy + 2, tidz + 2]"
DOMAIN = (256, 128, 64)
BLOCK = (128, 2, 2)


def expected_kernel() -> ws.Kernel:
    """The same 7-point star, built with the Python API."""
    x, y, z = ws.tidx, ws.tidy, ws.tidz
    src = ws.Field("src", shape=(260, 132, 68), itemsize=8)
    dst = ws.Field("dst", shape=(260, 132, 68), itemsize=8)
    c = (x + 2, y + 2, z + 2)
    loads = [src[c]] + [src[tuple(c[a] + s if a == d else c[a] for a in range(3))]
                        for d in range(3) for s in (-1, 1)]
    return ws.Kernel(loads=loads, stores=[dst[c]], domain=DOMAIN, fp_instructions=7)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    exe = Path(sys.executable).with_name("warpspeed")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "warpspeed.cli"]
    proc = subprocess.Popen(cmd + ["serve", "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert f"http://127.0.0.1:{port}/" in line, line
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "server died"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="warpspeed-chromium-")
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                "--window-size=1400,1000", "--hide-scrollbars"):
        opts.add_argument(arg)
    try:  # an explicit Service: Selenium Manager (which downloads) is never run
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    except WebDriverException as exc:
        pytest.skip(f"chromium does not start here: {exc.msg}")
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def find(driver: webdriver.Chrome, css: str) -> WebElement:
    """The first element matching ``css`` in any shadow root (LookupError if none)."""
    found = driver.execute_script(DEEP, css)
    if not found:
        raise LookupError(f"no element {css}")
    return found[0]


def element(driver: webdriver.Chrome, css: str) -> WebElement:
    """The first element matching ``css`` in any shadow root, waiting for it."""
    return wait_for(lambda: find(driver, css), what=css, driver=driver)


def wait_for(check: Callable[[], Any], timeout: float = 30, what: str = "",
             driver: webdriver.Chrome | None = None) -> Any:
    """The first truthy value of ``check()``; an element that Bokeh
    re-rendered meanwhile (stale) or that is not there yet counts as not yet.
    On a time-out the page's error messages and address are reported."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
        except (StaleElementReferenceException, LookupError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            seen = ""
            if driver is not None:
                errors = [e.text for e in driver.execute_script(DEEP, ".ws-error")]
                seen = f"; errors shown: {errors}; address: {driver.current_url}"
            raise AssertionError(f"timed out waiting for {what}{seen}")
        time.sleep(0.1)


def in_link(driver: webdriver.Chrome, key: str) -> str | None:
    """The value of form field ``key`` in the address bar's query string."""
    values = parse_qs(urlparse(driver.current_url).query).get(key)
    return values[0] if values else None


def type_into(driver: webdriver.Chrome, key: str, text: str) -> None:
    """Type ``text`` into the input of form field ``key`` as a user does, then
    leave it (Tab) and wait until the server has it (the query string says
    so). ChromeDriver occasionally loses the tail of a long text typed into
    a shadow-DOM input; the text is then typed again."""
    host = element(driver, f".ws-in-{key}")
    box = host.shadow_root.find_element(By.CSS_SELECTOR, "textarea, input")
    wait_for(box.is_displayed, what=f"the {key} box to show", driver=driver)
    default = getattr(Form(), key)
    for _ in range(3):
        driver.execute_script("arguments[0].value = ''", box)  # no change event yet
        box.send_keys(text + Keys.TAB)
        try:
            wait_for(lambda: box.get_attribute("value") == text and (
                in_link(driver, key) == text or text == default and in_link(driver, key) is None),
                timeout=5, what=f"{key} = {text[:40]!r} on the server")
            return
        except AssertionError:
            continue
    raise AssertionError(f"could not type {text[:40]!r} into {key}")


def shown(driver: webdriver.Chrome, key: str) -> str:
    """The exact value behind a number shown on the page (``data-value``)."""
    return str(find(driver, f".ws-{key}").get_attribute("data-value"))


def error_of(driver: webdriver.Chrome, key: str) -> str:
    found = driver.execute_script(DEEP, f".ws-err-{key} >>> .ws-error")
    return str(found[0].text) if found else ""


def test_enter_a_kernel_by_hand(server: str, browser: webdriver.Chrome,
                                tmp_path: Path) -> None:
    t0 = time.monotonic()
    p = ws.predict(expected_kernel(), "A100", BLOCK)
    browser.get(server)
    element(browser, ".ws-glups")  # the default stencil's prediction is shown
    mode = element(browser, ".ws-in-mode")
    by_hand = [b for b in mode.shadow_root.find_elements(By.CSS_SELECTOR, "button")
               if b.text == "by hand"]
    by_hand[0].click()
    type_into(browser, "fields", FIELDS)
    type_into(browser, "loads", "\n".join(LOADS))
    type_into(browser, "stores", STORE)
    type_into(browser, "domain", ",".join(map(str, DOMAIN)))
    type_into(browser, "fp", "7")
    type_into(browser, "block", ",".join(map(str, BLOCK)))
    wait_for(lambda: shown(browser, "glups") == repr(p.glups),
             what="the hand kernel's GLup/s", driver=browser)
    volumes = p.to_dict()["volumes"]
    for key, value in volumes.items():
        assert shown(browser, key) == repr(value), key
    for key, value in p.limits.items():
        assert shown(browser, f"limit-{key}") == repr(value), key
    assert find(browser, ".ws-limiter").text == p.limiter.upper()
    assert f"{p.glups:.2f}" == find(browser, ".ws-glups").text

    shot = SCREENSHOT
    if shot.exists() and os.environ.get("WARPSPEED_UPDATE_SCREENSHOT") != "1":
        shot = tmp_path / "web_calculator.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    browser.execute_script("document.activeElement && document.activeElement.blur();"
                           "window.scrollTo(0, 0);")
    time.sleep(0.3)
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    external = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".filter(n => !n.startsWith(arguments[0]) && !n.startsWith('ws://')"
        " && !n.startsWith('data:'))", server.rstrip("/"))
    assert not external, f"the page loads resources from elsewhere: {external}"

    # the address bar holds a link that restores the page
    link = browser.current_url
    assert "loads=" in link and "mode=hand" in link, link
    browser.get("about:blank")
    browser.get(link)
    wait_for(lambda: browser.execute_script(DEEP, ".ws-glups")
             and shown(browser, "glups") == repr(p.glups), what="the restored page", driver=browser)

    # hostile and bad input: an error next to the field, the server keeps serving
    type_into(browser, "loads", "__import__('os').system('id')")
    assert "unexpected character" in wait_for(lambda: error_of(browser, "loads"),
                                              what="the parser's error", driver=browser)
    type_into(browser, "loads", "src[tidx*tidy, tidy, tidz]")
    assert "multiplies thread-dependent values" in wait_for(
        lambda: "multiplies" in error_of(browser, "loads") and error_of(browser, "loads"),
        what="the library's non-affine error", driver=browser)
    huge = element(browser, ".ws-in-stores").shadow_root.find_element(
        By.CSS_SELECTOR, "textarea")
    browser.execute_script("arguments[0].value = 'x'.repeat(1 << 20);"
                           "arguments[0].dispatchEvent(new Event('change'));", huge)
    assert "at most 20000" in wait_for(
        lambda: "at most" in error_of(browser, "stores") and error_of(browser, "stores"),
        what="the size error", driver=browser)
    type_into(browser, "stores", STORE)
    type_into(browser, "loads", "\n".join(LOADS))
    type_into(browser, "block", "1024,2,1")
    assert "A100 allows at most 1024 per block" in wait_for(
        lambda: error_of(browser, "block"), what="the library's block error", driver=browser)
    type_into(browser, "block", ",".join(map(str, BLOCK)))
    wait_for(lambda: shown(browser, "glups") == repr(p.glups) and not error_of(browser, "loads"),
             what="recovery", driver=browser)

    # rank the design space and click a row
    tabs = [t for t in browser.execute_script(DEEP, ".bk-tab") if t.text == "Ranking"]
    tabs[0].click()
    button = element(browser, ".ws-rank").shadow_root.find_element(
        By.CSS_SELECTOR, "button")
    button.click()
    ranking = ws.rank(expected_kernel(), "A100", threads=[1024], jobs=1)  # the form's count
    best = ranking.predictions[0]
    status = wait_for(lambda: "ranked" in find(browser, ".ws-rank-status").text
                      and find(browser, ".ws-rank-status").text, what="the ranking", driver=browser)
    assert f"{len(ranking.predictions)} configurations ranked" in status, status

    def first_block() -> Any:
        cells = browser.execute_script(
            DEEP, ".ws-ranking >>> .tabulator-row .tabulator-cell[tabulator-field='block']")
        return cells and cells[0].text == ",".join(map(str, best.block)) and cells[0]

    wait_for(first_block, what="the best block in the table's first row", driver=browser)
    wait_for(lambda: first_block().click() or True, what="a click on the first row",
             driver=browser)
    wait_for(lambda: shown(browser, "glups") == repr(best.glups), what="the clicked row",
             driver=browser)
    assert time.monotonic() - t0 < 60



def test_a_link_to_an_unknown_machine_is_refused(server: str, browser: webdriver.Chrome) -> None:
    browser.get(server.rstrip("/") + "/?machine=A1000&block=256,1,2")
    message = wait_for(lambda: error_of(browser, "machine"), what="the machine's error",
                       driver=browser)
    assert "'A1000'" in message and "A100" in message, message
    assert "no prediction" in element(browser, ".ws-summary").text
    assert not browser.execute_script(DEEP, ".ws-glups")  # no other GPU's number
    # picking a machine clears the refusal and predicts on it
    host = element(browser, ".ws-in-machine")
    box = host.shadow_root.find_element(By.CSS_SELECTOR, "select")
    from selenium.webdriver.support.ui import Select

    from warpspeed.web.state import evaluate

    Select(box).select_by_value("H100")
    p = evaluate(Form(machine="H100")).prediction
    assert p is not None
    wait_for(lambda: browser.execute_script(DEEP, ".ws-glups")
             and shown(browser, "glups") == repr(p.glups), what="the H100 prediction",
             driver=browser)
