"""The page at / in headless Chromium (Debian's, driven by Playwright): type a prompt,
watch the tokens stream in, coloured by the passes each used, with a live tokens/s;
then a screenshot in tests/python/out/page.png.

Needs the `chromium` package (scripts/test.sh installs it) and the `playwright` Python
package (requirements-test.txt; it drives an installed browser, it downloads none).
"""

import os
import re
import shutil
from pathlib import Path

import pytest

from serve_harness import missing

OUT = Path(__file__).resolve().parent / "out"
REPO = Path(__file__).resolve().parents[2]
# What Chromium needs here: root (no sandbox), no GPU, and no background connections,
# which a closed network refuses by the dozen.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
TOKENS = 48


def chromium():
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        missing("no chromium: install Debian's chromium package (scripts/test.sh does)")
    return path


@pytest.fixture(scope="module")
def page_server(start_server, tiny_model):
    # The shipped model writes readable text; the random one will do where it is absent.
    shipped = REPO / "models" / "dory-tiny"
    if (shipped / "model.safetensors").exists():
        # Tokens of dory-tiny that are confident enough leave the loop after a pass or two.
        return start_server(shipped, "--parallel", "1"), "confidence:0.3"
    # A random model is never confident: confidence ≥ 0 makes every decoded token leave
    # after one pass, while the first (from the prompt) runs all of them.
    return start_server(tiny_model, "--parallel", "1"), "confidence:0"


def test_the_page_streams_tokens_coloured_by_passes(page_server):
    server, exit_rule = page_server
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("the playwright package is not installed (pip install -r requirements-test.txt)")
    browser_path = chromium()
    OUT.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, headless=True, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 760})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(server.url + "/")
            page.wait_for_selector("#legend .swatch")
            passes = page.locator("#legend .swatch").count()
            assert passes >= 1
            assert "parameters" in page.inner_text("#model")

            # Record how many tokens each DOM update brought, to see them stream in.
            page.evaluate("""() => {
                window.batches = [];
                new MutationObserver(() => window.batches.push(document.querySelectorAll('#output .tok').length))
                    .observe(document.getElementById('output'), {childList: true});
            }""")
            page.fill("#prompt", "To be, or not to be, that is the question:")
            page.fill("#max-tokens", str(TOKENS))
            page.fill("#temperature", "0.8")
            page.fill("#seed", "1")
            # An exit rule so that tokens can leave the loop early and the colours vary.
            page.fill("#exit", exit_rule)
            page.click("#generate")
            page.wait_for_function("document.querySelectorAll('#output .tok').length >= 1")
            page.wait_for_selector("#generate:not([disabled])", timeout=120_000)

            tokens = page.locator("#output .tok")
            assert tokens.count() == TOKENS, page.inner_text("#status")
            assert page.inner_text("#status") == "finished: length"
            counts = page.evaluate("window.batches")
            assert len(set(counts)) > 1, f"the tokens came in one piece, not streamed: {counts}"
            used = [int(t) for t in tokens.evaluate_all("ts => ts.map(t => t.dataset.passes)")]
            assert all(1 <= u <= passes for u in used), used
            colours = tokens.evaluate_all("ts => ts.map(t => t.style.background)")
            assert all(c.startswith("rgb") for c in colours), colours[:3]
            # Tokens with the same passes share a colour; different passes, different colours.
            by_passes = {}
            for u, c in zip(used, colours):
                by_passes.setdefault(u, set()).add(c)
            assert all(len(cs) == 1 for cs in by_passes.values()), by_passes
            assert len(by_passes) >= 2, f"the exit rule should give tokens of different depths: {used}"
            assert len({next(iter(cs)) for cs in by_passes.values()}) == len(by_passes)
            assert re.fullmatch(r"\d+(\.\d+)?", page.inner_text("#tps")) and float(page.inner_text("#tps")) > 0
            assert page.inner_text("#count") == str(TOKENS)
            assert page.inner_text("#output").startswith("To be, or not to be")
            assert errors == [], errors
            page.screenshot(path=str(OUT / "page.png"), full_page=True)

            # A refused request shows the server's message, and the page stays usable.
            page.fill("#exit", "sometimes")
            page.click("#generate")
            page.wait_for_function("document.getElementById('status').textContent.startsWith('error')")
            assert "exit" in page.inner_text("#status")
            assert page.is_enabled("#generate")
        finally:
            browser.close()


def test_the_page_asks_for_the_api_key_and_sends_it(start_server, tiny_model):
    server = start_server(tiny_model, "--parallel", "1", "--api-key", "s3cret")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("the playwright package is not installed (pip install -r requirements-test.txt)")
    browser_path = chromium()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, headless=True, args=FLAGS)
        try:
            page = browser.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(server.url + "/")
            # /v1/models answered 401: the page says so and shows the key's field.
            page.wait_for_selector("#key:not([hidden])")
            assert "API key" in page.inner_text("#model")
            page.fill("#api-key", "wrong")
            page.dispatch_event("#api-key", "change")
            page.wait_for_function("document.getElementById('model').textContent.includes('API key')")
            page.fill("#api-key", "s3cret")
            page.dispatch_event("#api-key", "change")
            page.wait_for_selector("#legend .swatch")
            assert "parameters" in page.inner_text("#model")
            page.fill("#prompt", "hello")
            page.fill("#max-tokens", "4")
            page.fill("#exit", "none")
            page.click("#generate")
            page.wait_for_function("document.getElementById('status').textContent.startsWith('finished')",
                                   timeout=60_000)
            assert page.locator("#output .tok").count() == 4
            assert errors == [], errors
        finally:
            browser.close()
