"""report.html in a real browser (headless Chromium): it loads without console messages,
every image loads, and the overview's counts are results.json's; and a screenshot of a claim's
page shows its plot with every control that draws something, the one far off the claim's
axes included.

The page marks itself when loaded (``data-images``, ``data-broken-images`` on ``<body>``,
from the script in ``theorycheck/report/templates/report.js``); Chromium's ``--dump-dom``
prints the document after the load event, and ``--enable-logging=stderr`` prints every
console message and uncaught error as a ``CONSOLE`` line.  Skipped, with the reason, where
no Chromium is installed (``.ci/run`` installs Debian's ``chromium``).
"""
from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from html.parser import HTMLParser

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.image import imread

from tests.report_samples import one_claim_results, sample_results
from theorycheck.claim import PROVENANCE
from theorycheck.report import write_report
from theorycheck.report.plots import control_colors, control_overlays
from theorycheck.report.results import CLAIM_OUTCOMES, CONTROL_OUTCOMES

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER = next((b for b in map(shutil.which, BROWSERS) if b), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no headless browser: install Debian's "
                                "'chromium' (apt-get install chromium) to run the report test")


class LoadedPage(HTMLParser):
    """The body's load marks, the overview table's cells (``data-paper`` rows,
    ``data-count`` cells), the plot captions' attributes and the text of a dumped document."""

    def __init__(self):
        super().__init__()
        self.body: dict[str, str] = {}
        self.captions: list[dict[str, str]] = []
        self.text: list[str] = []
        self.counts: dict[str, dict[str, int]] = {}
        self.images = 0
        self._row: str | None = None
        self._cell: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "body":
            self.body = attrs
        elif tag == "img":
            self.images += 1
        elif tag == "figcaption" and attrs.get("class") == "plot-key":
            self.captions.append({k: v for k, v in attrs.items() if k.startswith("data-")})
        elif tag == "tr" and "data-paper" in attrs:
            self._row = attrs["data-paper"]
            self.counts[self._row] = {}
        elif tag == "td" and self._row and "data-count" in attrs:
            self._cell = attrs["data-count"]

    def handle_endtag(self, tag):
        if tag == "tr":
            self._row = None
        elif tag == "td":
            self._cell = None

    def handle_data(self, data):
        self.text.append(data)
        if self._row and self._cell and data.strip():
            self.counts[self._row][self._cell] = int(data)


def browse(page, tmp_path, *what: str) -> subprocess.CompletedProcess:
    """Headless Chromium on ``page`` doing ``what`` (``--dump-dom``, ``--screenshot=...``)."""
    run = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
         "--virtual-time-budget=5000", *what, page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return run


def open_in_browser(page, tmp_path) -> tuple[LoadedPage, list[str]]:
    """Load ``page`` in headless Chromium; the loaded document and its console lines."""
    run = browse(page, tmp_path, "--dump-dom")
    loaded = LoadedPage()
    loaded.feed(run.stdout)
    return loaded, [line for line in run.stderr.splitlines() if ":CONSOLE" in line]


def independent_evidence(claims: list[dict]) -> int:
    """Claims with at least one independent control (`theorycheck.evidence`)."""
    return sum(bool(c.get("independent_controls")) for c in claims)


def expected_counts(results: dict) -> dict[str, dict[str, int]]:
    """The overview's cells computed from results.json: per paper, and the run's summary."""
    rows = {}
    for paper in {c["paper"] for c in results["claims"]}:
        claims = [c for c in results["claims"] if c["paper"] == paper]
        outcomes = Counter(c["outcome"] for c in claims)
        controls = Counter(k["outcome"] for c in claims for k in c["controls"])
        provenance = Counter(c["provenance"] for c in claims)
        rows[paper] = dict({"claims": len(claims), "controls": sum(controls.values()),
                            "discrepancies": sum(c["kind"] == "discrepancy" for c in claims),
                            "independent_evidence": independent_evidence(claims)},
                           **{f"claim_outcomes.{o}": outcomes[o] for o in CLAIM_OUTCOMES},
                           **{f"control_outcomes.{o}": controls[o] for o in CONTROL_OUTCOMES},
                           **{f"provenance.{p}": provenance[p] for p in PROVENANCE})
    s = results["summary"]
    provenance = Counter(c["provenance"] for c in results["claims"])
    rows["__total__"] = dict({"claims": s["claims"], "controls": s["controls"],
                              "discrepancies": s["discrepancies"],
                              "independent_evidence": independent_evidence(results["claims"])},
                             **{f"claim_outcomes.{o}": n for o, n in s["claim_outcomes"].items()},
                             **{f"control_outcomes.{o}": n for o, n in s["control_outcomes"].items()},
                             **{f"provenance.{p}": provenance[p] for p in PROVENANCE})
    return rows


def test_report_loads_cleanly_with_every_image_and_the_results_counts(tmp_path):
    out = write_report(sample_results(), tmp_path / "latest")
    results = json.loads((out / "results.json").read_text())
    loaded, console = open_in_browser(out / "report.html", tmp_path)
    assert console == []
    assert int(loaded.body["data-images"]) == loaded.images >= 2  # the script ran after load
    assert loaded.body["data-broken-images"] == "0"
    expected = expected_counts(results)
    assert set(loaded.counts) == set(expected)
    for row, cells in loaded.counts.items():
        assert cells.items() <= expected[row].items(), row
        # a hidden column is an outcome that did not occur
        assert all(n == 0 for key, n in expected[row].items() if key not in cells), row


def test_the_browser_check_sees_a_missing_plot(tmp_path):
    """The check above can fail: with a plot file gone the page reports a broken image."""
    out = write_report(sample_results(), tmp_path / "latest")
    next((out / "plots").glob("*.png")).unlink()
    loaded, _ = open_in_browser(out / "report.html", tmp_path)
    assert int(loaded.body["data-broken-images"]) >= 1


#: the browser window of the screenshot, pixels (width, height): the page of one claim down to
#: the end of its plot's second panel
WINDOW = (1000, 2400)


def screenshot(page, tmp_path) -> np.ndarray:
    """Headless Chromium's screenshot of ``page`` in a :data:`WINDOW` window, RGB in [0, 1]."""
    shot = tmp_path / "shot.png"
    browse(page, tmp_path, f"--window-size={WINDOW[0]},{WINDOW[1]}", "--hide-scrollbars",
           f"--screenshot={shot}")
    return imread(shot)[..., :3]


def pixels_of(image: np.ndarray, color: str, alpha: float = 0.85, within: float = 0.1) -> int:
    """How many pixels of ``image`` show ``color`` drawn at ``alpha`` over white."""
    drawn = alpha * np.array(to_rgb(color)) + (1 - alpha)
    return int(np.sum(np.abs(image - drawn).max(axis=-1) < within))


def test_a_claim_page_shows_its_plot_with_one_key_entry_per_control_and_none_dropped(tmp_path):
    """The report of a run of one claim (`tests.report_samples.one_claim_results`: control
    slow_step inside the claim's axes, far entirely above them, stricter re-judging the
    claim's numbers, same_run repeating its curve) as the browser draws it: a page that is not
    blank, on which the far control's curves show in its colour (the second panel: in the
    claim's panel they would be off the axes), and whose caption keys one entry per control
    that draws and says why the two others draw nothing; no plot warning anywhere."""
    results = one_claim_results()
    out = write_report(results, tmp_path / "latest")
    (claim,) = results["claims"]
    far = control_colors(claim["plots"][0], control_overlays(claim, "loss"))["far"]
    image = screenshot(out / "report.html", tmp_path)
    assert image.shape[:2] == (WINDOW[1], WINDOW[0])
    assert image.std() > 0.05  # this page: 0.13; a blank one (a failed load, a scroll into
    # emptiness) 0
    # far's two curves span the second panel's width (~500 pixels each: 860 pixels match);
    # without the second panel no pixel matches
    assert pixels_of(image, far) > 400
    loaded, console = open_in_browser(out / "report.html", tmp_path)
    assert console == [] and loaded.body["data-broken-images"] == "0"
    assert loaded.captions == [{"data-drawn": "slow_step,far", "data-below": "far",
                                "data-left-out": "stricter,same_run"}]
    assert "will not show" not in "".join(loaded.text)
