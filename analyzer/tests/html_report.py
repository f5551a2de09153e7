"""Opens an HTML report of `analyzer report` in headless Chromium (Debian's, never a downloaded
one) through Playwright and checks what a reader does with it. Run by analyzer/tests/it/html_report.rs.

    python3 html_report.py REPORT.html --task TASK --screenshot OUT.png [--violations N --event E]
                           [--coverage CELLS --coverage-fail CELLS]

Fails (exit 1, one line per failure) on: a console error or page error; a request for anything but
the file itself; violations or the filter not visible on load; violation 1's chain (clicked, and
opened as REPORT.html#violation-1) not an <svg> in #chain naming its event; the task typed into
#filter (on input, then on Enter) not shown as an <svg> naming it; a chain drawn in the page from
the embedded rows that differs, text for text, from the one the analyzer drew in advance; a
timeline without an <svg>, whose crash count disagrees with the figures, or that does not zoom;
with --coverage, a coverage matrix (#coverage) without that many linked cells and --coverage-fail
FAIL cells, or whose first FAIL cell, clicked, does not open a violation's chain.
Exit 2 when Chromium or Playwright is missing.
"""
import argparse
import pathlib
import sys
import tempfile

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 60_000

failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)
    return ok


def svg_text(page, selector="#chain svg"):
    return page.eval_on_selector_all(selector, "els => els.map(e => e.textContent).join('\\n')")


def wait_chain_naming(page, name):
    """Waits until an <svg> in #chain names `name`; False if it never does."""
    try:
        page.wait_for_function(
            """name => [...document.querySelectorAll('#chain svg')]
                 .some(s => s.textContent.includes(name))""",
            arg=name,
            timeout=TIMEOUT_MS,
        )
        return True
    except Exception:  # noqa: BLE001 - a timeout is the failure being reported
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--task", required=True)
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--violations", type=int, default=0)
    ap.add_argument("--event", default=None)
    ap.add_argument("--coverage", type=int, default=0)
    ap.add_argument("--coverage-fail", type=int, default=0)
    a = ap.parse_args()

    if not pathlib.Path(CHROMIUM).exists():
        print(f"html_report: {CHROMIUM} is missing: apt-get install chromium (scripts/deps.sh)",
              file=sys.stderr)
        sys.exit(2)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("html_report: the playwright Python package is missing: pip install playwright "
              "(scripts/deps.sh)", file=sys.stderr)
        sys.exit(2)

    url = pathlib.Path(a.report).resolve().as_uri()
    console, requests = [], []
    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="html-report-") as profile:
        # A fresh profile each run; Playwright passes it as --user-data-dir and adds --headless.
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": 1500, "height": 1000})
        ctx.set_default_timeout(TIMEOUT_MS)

        def watch(page):
            page.on("console", lambda m: m.type == "error" and console.append(m.text))
            page.on("pageerror", lambda e: console.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            return page

        page = watch(ctx.pages[0] if ctx.pages else ctx.new_page())
        page.goto(url, wait_until="load")
        page.wait_for_selector("#timeline svg")

        expect(page.is_visible("#filter"), "#filter is not visible on load")
        shown = page.eval_on_selector_all("[data-violation]", "els => els.length")
        expect(shown == a.violations, f"{shown} [data-violation] elements, expected {a.violations}")
        if a.violations:
            first = page.locator('[data-violation="1"]')
            expect(first.is_visible(), "violation 1 is not visible on load")
            event = first.get_attribute("data-event")
            expect(event == a.event, f"violation 1 names event {event!r}, the analyzer {a.event!r}")
            first.click()
            expect(wait_chain_naming(page, a.event),
                   f"after a click on violation 1, no svg in #chain names {a.event}: {svg_text(page)[:300]!r}")
            marked = page.eval_on_selector_all("#chain svg rect[fill='#FFECA0']", "els => els.length")
            expect(marked > 0, "violation 1's chain marks no witness row")
        else:
            note = page.inner_text("#violations-note")
            expect("No invariant failed" in note, f"no violation, yet the note says {note!r}")

        # The filter: on input, then again on Enter after clearing.
        page.fill("#filter", a.task)
        expect(wait_chain_naming(page, a.task),
               f"typing {a.task} into #filter shows no svg naming it: {svg_text(page)[:300]!r}")
        page.fill("#filter", "")
        page.evaluate("() => document.getElementById('chain').replaceChildren()")
        page.type("#filter", a.task, delay=0)
        page.press("#filter", "Enter")
        expect(wait_chain_naming(page, a.task), f"Enter on {a.task} in #filter shows no chain")

        # Chains drawn in the page agree with the analyzer's, text for text.
        diffs = page.evaluate("() => window.outboxReport.compareDrawn()")
        expect(diffs["compared"] > 0, "no chain drawn in advance to compare with the page's drawing")
        for d in diffs["differ"]:
            failures.append(f"the page draws {d['title']} unlike the analyzer: {d['first']}")

        # The timeline: the crashes the figures count, and a zoom to the first half.
        crashes = page.evaluate("() => window.outboxReport.timelineCrashes()")
        expect(crashes["shown"] == crashes["figures"],
               f"the timeline shows {crashes['shown']} crashes, the figures count {crashes['figures']}")
        page.fill("#tl-from", "0")
        end = float(page.input_value("#tl-to"))
        page.fill("#tl-to", f"{end / 2:.6f}")
        page.click("#tl-zoom")
        zoomed = float(page.input_value("#tl-to"))
        expect(zoomed < end or end == 0, f"zooming to {end / 2} s left the range ending at {zoomed} s")

        # The coverage matrix: its cells, and a FAIL cell that opens its scenario's violation.
        cells = page.eval_on_selector_all("#coverage td a", "els => els.length")
        expect(cells == a.coverage, f"{cells} linked cells in #coverage, expected {a.coverage}")
        failing = page.eval_on_selector_all("#coverage td.cov-fail", "els => els.length")
        expect(failing == a.coverage_fail,
               f"{failing} FAIL cells in #coverage, expected {a.coverage_fail}")
        if a.coverage_fail:
            page.evaluate("() => document.getElementById('chain').replaceChildren()")
            page.locator("#coverage td.cov-fail a").first.click()
            page.wait_for_function("() => location.hash.startsWith('#violation-')")
            page.wait_for_selector("#chain svg")

        pathlib.Path(a.screenshot).parent.mkdir(parents=True, exist_ok=True)
        if a.violations:
            first.click()
            wait_chain_naming(page, a.event)
        page.screenshot(path=a.screenshot, full_page=True)

        # The same violation opened from its link.
        if a.violations:
            linked = watch(ctx.new_page())
            linked.goto(url + "#violation-1", wait_until="load")
            expect(wait_chain_naming(linked, a.event),
                   f"{url}#violation-1 shows no svg naming {a.event}")
        ctx.close()

    expect(not console, f"console errors: {console}")
    others = sorted({u for u in requests if u.split("#")[0] != url})
    expect(not others, f"requests beyond the file itself: {others}")
    for f in failures:
        print(f"html_report: {f}", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
