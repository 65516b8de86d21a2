#!/usr/bin/env python3
"""Times tune dashboard and optuna-dashboard serving the same trials.

    dashboard_bench.py --tune URL --experiment NAME --optuna URL [--runs 5] [--api-only]

API: the first (cold) answer and the median of --runs more, for each
server's experiments list and its one-experiment document (tune:
/api/experiment?name=..., which carries every trial, its params and its
learning curve; optuna-dashboard: /api/studies/1, its study detail, which
carries the same). Page: time from navigation start to the first drawn
view in headless Chromium (tests/dashboard/browser_check.py), median of
--runs fresh browser starts: for tune the page's own "tune:rendered" mark
(set once every chart and the table are drawn); for optuna-dashboard the
moment its history chart's plot area holds a drawn point (watched with a
MutationObserver installed before the page loads). Prints a Markdown table.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "..", "tests", "dashboard", "browser_check.py")
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch_seconds(url):
    start = time.perf_counter()
    body = OPENER.open(url, timeout=600).read()
    return time.perf_counter() - start, len(body)


def api(url, runs):
    cold, size = fetch_seconds(url)
    warm = [fetch_seconds(url)[0] for _ in range(runs)]
    return cold, statistics.median(warm), size


def page_ms(steps, python, runs, expr):
    out = []
    for _ in range(runs):
        r = subprocess.run([python, CHECK, "--timeout", "300"] + steps + ["eval:t=" + expr],
                           capture_output=True, text=True)
        doc = json.loads(r.stdout)
        if doc["error"]:
            raise RuntimeError(doc["error"])
        out.append(doc["values"]["t"])
    return statistics.median(out), out


# Installed before optuna-dashboard's scripts run: records when the first
# trace point of a Plotly or SVG chart appears.
OPTUNA_WATCH = """
window.__drawnAt = null;
new MutationObserver(() => {
  if (window.__drawnAt === null && document.querySelector('.js-plotly-plot .scatterlayer .point, .js-plotly-plot .scatterlayer path.js-line'))
    window.__drawnAt = performance.now();
}).observe(document, {subtree: true, childList: true});
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tune", required=True)
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--optuna", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--python", default="/usr/bin/python3", help="a python3 with the websocket module")
    ap.add_argument("--api-only", action="store_true", help="time the API answers only")
    a = ap.parse_args()

    rows = []
    for label, url in [("tune: /api/experiments", a.tune + "api/experiments"),
                       ("tune: /api/experiment?name=" + a.experiment, a.tune + "api/experiment?name=" + a.experiment),
                       ("optuna-dashboard: /api/studies", a.optuna + "api/studies"),
                       ("optuna-dashboard: /api/studies/1", a.optuna + "api/studies/1")]:
        cold, warm, size = api(url, a.runs)
        rows.append("| %s | %.1f | %.1f | %.1f |" % (label, cold * 1000, warm * 1000, size / 1e6))
    print("| answer | first (ms) | median of %d more (ms) | MB |" % a.runs)
    print("|---|---|---|---|")
    print("\n".join(rows))

    if a.api_only:
        return 0
    tune_ms, tune_all = page_ms(
        ["goto:" + a.tune + "#/e/" + a.experiment, "wait:performance.getEntriesByName('tune:rendered').length"],
        a.python, a.runs, "performance.getEntriesByName('tune:rendered')[0].startTime")
    optuna_ms, optuna_all = page_ms(
        ["inject:" + OPTUNA_WATCH, "goto:" + a.optuna + "dashboard/studies/1", "wait:window.__drawnAt !== null"],
        a.python, a.runs, "window.__drawnAt")
    print()
    print("| page | to first drawn view (ms, median of %d) | all runs |" % a.runs)
    print("|---|---|---|")
    print("| tune dashboard | %.0f | %s |" % (tune_ms, ", ".join("%.0f" % x for x in tune_all)))
    print("| optuna-dashboard | %.0f | %s |" % (optuna_ms, ", ".join("%.0f" % x for x in optuna_all)))


if __name__ == "__main__":
    sys.exit(main())
