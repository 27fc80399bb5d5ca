"""The search page in a real headless browser (Debian's chromium + chromium-driver, Selenium): type a query,
see the expected result, open its passage."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

if not CHROMIUM.exists() or not Path(DRIVER).exists():
    pytest.skip("needs Debian's chromium and chromium-driver: apt-get install -y chromium chromium-driver",
                allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium: pip install selenium")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def browser():
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile}", "--window-size=1280,900"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=DRIVER), options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def wait(driver, condition, timeout=30):
    return WebDriverWait(driver, timeout).until(condition)


def test_search_then_open_the_passage(browser, live_server):
    browser.get(live_server.url + "/")
    # the filters are filled from /stats and /patterns
    wait(browser, lambda d: len(Select(d.find_element(By.ID, "kind")).options) > 1)
    wait(browser, lambda d: "tma-load" in [o.get_attribute("value") for o in
                                           Select(d.find_element(By.ID, "pattern")).options])

    box = browser.find_element(By.ID, "q")
    box.send_keys("variable scoping in dynamic control flow")
    browser.find_element(By.ID, "go").click()
    first = wait(browser, EC.visibility_of_element_located((By.CSS_SELECTOR, "#results article.hit")))
    assert "result" in browser.find_element(By.ID, "status").text
    assert "Scoping" in first.find_element(By.CSS_SELECTOR, ".section").text
    assert first.find_element(By.CSS_SELECTOR, ".badge.kind").text  # kind shown
    # code blocks are highlighted: the python fence in this worklog chunk yields keyword spans
    assert first.find_elements(By.CSS_SELECTOR, "pre.code .hl-kw")
    cite = first.find_element(By.CSS_SELECTOR, "a.cite")
    assert cite.text.startswith("docs_corpus/000_51fd70c217354f0e.txt:")
    start, end = map(int, cite.text.rsplit(":", 1)[1].split("-"))
    assert "q=variable" in browser.current_url  # the search is in the URL

    cite.click()
    wait(browser, EC.visibility_of_element_located((By.CSS_SELECTOR, "#passage-code .hit-line")))
    assert "/passage?" in browser.current_url
    hit_lines = browser.find_elements(By.CSS_SELECTOR, "#passage-code .hit-line")
    assert [int(e.get_attribute("data-line")) for e in hit_lines] == list(range(start, end + 1))
    assert "Scoping" in " ".join(e.text for e in hit_lines)

    browser.back()  # the results come back from the URL
    wait(browser, EC.visibility_of_element_located((By.CSS_SELECTOR, "#results article.hit")))


def test_filters_and_errors_on_the_page(browser, live_server):
    browser.get(live_server.url + "/?q=copy&pattern=tma-load")
    hits = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results article.hit"))
    for h in hits:
        assert "tma-load" in [b.text for b in h.find_elements(By.CSS_SELECTOR, ".badge.pattern")]
    browser.get(live_server.url + "/?q=copy&tag=no-such-tag")
    status = wait(browser, EC.visibility_of_element_located((By.CSS_SELECTOR, "#status.error")))
    assert "unknown tag" in status.text
    browser.get(live_server.url + "/passage?path=docs_corpus/missing.txt&start=1&end=2")
    status = wait(browser, EC.visibility_of_element_located((By.CSS_SELECTOR, "#status.error")))
    assert "no ingested source" in status.text
