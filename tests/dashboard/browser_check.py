#!/usr/bin/env python3
"""Drives headless Chromium through the DevTools protocol for the dashboard tests.

    browser_check.py [--timeout S] [--size WxH] STEP...

Steps run in order in one tab:
    inject:JS         run JS in every document loaded from now on, before its scripts
    goto:URL          navigate (the page is not reloaded otherwise)
    wait:JS           evaluate JS until it is truthy, a throw counting as false
                      (at most --timeout seconds)
    eval:NAME=JS      evaluate JS (promises awaited) and record its value as NAME
    shot:FILE.png     save a screenshot of the tab

Prints one JSON object: {"values": {NAME: value}, "console_errors": [...],
"dialogs": [...], "error": null or what failed}. Console errors are
console.error calls, uncaught exceptions and the browser's own error log
entries (a failed request, a refused script). Dialogs (alert, confirm) are
recorded and dismissed. Exit code 0 when every step ran, 1 otherwise.
Needs Debian's chromium and python3-websocket.
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket  # python3-websocket


class Tab:
    def __init__(self, ws_url, timeout):
        # A busy page answers late: no call waits less than a step may.
        self.timeout = max(60, timeout)
        self.ws = websocket.create_connection(ws_url, timeout=self.timeout, suppress_origin=True)
        self.next_id = 0
        self.console_errors = []
        self.dialogs = []

    def _event(self, msg):
        method, params = msg.get("method"), msg.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.console_errors.append(
                " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            d = params.get("exceptionDetails", {})
            self.console_errors.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            e = params["entry"]
            self.console_errors.append(e.get("text", "") + (" " + e["url"] if e.get("url") else ""))
        elif method == "Page.javascriptDialogOpening":
            self.dialogs.append(params.get("message", ""))
            self.send_async("Page.handleJavaScriptDialog", {"accept": False})

    def send_async(self, method, params=None):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params or {}}))
        return self.next_id

    def call(self, method, params=None):
        want = self.send_async(method, params)
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == want:
                if "error" in msg:
                    raise RuntimeError(method + ": " + json.dumps(msg["error"]))
                return msg.get("result", {})
            if "method" in msg:
                self._event(msg)

    def drain(self, seconds):
        """Handles events for `seconds`."""
        end = time.time() + seconds
        self.ws.settimeout(0.05)
        try:
            while time.time() < end:
                try:
                    msg = json.loads(self.ws.recv())
                except websocket.WebSocketTimeoutException:
                    continue
                if "method" in msg:
                    self._event(msg)
        finally:
            self.ws.settimeout(self.timeout)

    def evaluate(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "awaitPromise": True, "returnByValue": True})
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise RuntimeError("evaluating %r: %s" % (expr, d.get("exception", {}).get("description") or d.get("text")))
        return r.get("result", {}).get("value")


# Chromium listens on $TMPDIR/org.chromium.Chromium.XXXXXX/SingletonSocket,
# and a Unix socket's path has at most 107 bytes: with a deep checkout (the
# tests' TMPDIR is in the build directory) Chromium aborts with "Socket path
# too long" before it listens.
SOCKET_TAIL = len("/org.chromium.Chromium.XXXXXX/SingletonSocket")
SUN_PATH_MAX = 107


def chromium_tmp(profile):
    """Where Chromium's temporary files go: inside the profile (removed with
    it) when the socket path fits, else a short directory in /tmp, linked
    from the profile as "tmp" so that removing the profile finds it."""
    tmp = os.path.join(profile, "tmp")
    if len(tmp) + SOCKET_TAIL <= SUN_PATH_MAX:
        os.makedirs(tmp)
        return tmp
    short = tempfile.mkdtemp(prefix="tune_chromium_", dir="/tmp")
    os.symlink(short, tmp)
    return short


def remove_profile(profile):
    """Removes the profile and a short temporary directory it links to.
    Retried a few times: a Chromium helper may still be writing."""
    tmp = os.path.join(profile, "tmp")
    dirs = [os.path.realpath(tmp)] if os.path.islink(tmp) else []
    for attempt in range(5):
        for d in dirs + [profile]:
            shutil.rmtree(d, ignore_errors=True)
        if not any(os.path.lexists(d) for d in dirs + [profile]):
            return
        time.sleep(0.2)


def start_browser(profile, size):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise RuntimeError("chromium is not installed (scripts/install-deps.sh installs it)")
    args = [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-proxy-server",
            "--no-first-run", "--disable-extensions", "--disable-background-networking",
            "--disable-component-update", "--disable-crash-reporter", "--disable-breakpad",
            "--hide-scrollbars", "--remote-debugging-port=0",
            "--window-size=" + size, "--user-data-dir=" + profile, "about:blank"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env=dict(os.environ, TMPDIR=chromium_tmp(profile)))
    port_file = os.path.join(profile, "DevToolsActivePort")
    for _ in range(300):
        if os.path.exists(port_file):
            lines = open(port_file).read().split("\n")
            if lines[0].strip():
                return proc, int(lines[0])
        if proc.poll() is not None:
            raise RuntimeError("chromium exited with code %d before listening" % proc.returncode)
        time.sleep(0.1)
    raise RuntimeError("chromium did not open its DevTools port within 30 s")


def page_ws_url(port):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for _ in range(100):
        targets = json.load(opener.open("http://127.0.0.1:%d/json/list" % port, timeout=10))
        for t in targets:
            if t.get("type") == "page" and t.get("webSocketDebuggerUrl"):
                return t["webSocketDebuggerUrl"]
        time.sleep(0.1)
    raise RuntimeError("chromium shows no page target")


def stop_browser(proc):
    try:
        os.killpg(proc.pid, 15)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()


def open_browser(size, tries=3):
    """Starts Chromium in a fresh profile and returns (proc, profile, page
    websocket URL). A start that fails (on a loaded machine Chromium
    sometimes aborts before it listens) is tried again in a new profile, up
    to `tries` times; the last failure is raised."""
    for attempt in range(tries):
        profile = tempfile.mkdtemp(prefix="tune_chromium_")
        proc = None
        try:
            proc, port = start_browser(profile, size)
            return proc, profile, page_ws_url(port)
        except Exception:
            if proc is not None:
                stop_browser(proc)
            remove_profile(profile)
            if attempt + 1 == tries:
                raise


def run(steps, timeout, size):
    out = {"values": {}, "console_errors": [], "dialogs": [], "error": None}
    profile = None
    proc = None
    tab = None
    try:
        proc, profile, ws_url = open_browser(size)
        tab = Tab(ws_url, timeout)
        for domain in ("Runtime", "Log", "Page"):
            tab.call(domain + ".enable")
        for step in steps:
            kind, _, arg = step.partition(":")
            if kind == "inject":
                tab.call("Page.addScriptToEvaluateOnNewDocument", {"source": arg})
            elif kind == "goto":
                tab.call("Page.navigate", {"url": arg})
            elif kind == "wait":
                end = time.time() + timeout
                while not tab.evaluate("(() => { try { return !!(%s); } catch (e) { return false; } })()" % arg):
                    if time.time() > end:
                        raise RuntimeError("waited %g s for %s" % (timeout, arg))
                    tab.drain(0.1)
            elif kind == "eval":
                name, _, expr = arg.partition("=")
                out["values"][name] = tab.evaluate(expr)
            elif kind == "shot":
                shot = tab.call("Page.captureScreenshot", {"format": "png"})
                with open(arg, "wb") as f:
                    f.write(base64.b64decode(shot["data"]))
            else:
                raise RuntimeError("unknown step %r" % step)
        tab.drain(0.3)  # late errors of the last step
    except Exception as e:  # reported in the JSON, for the test to show
        out["error"] = str(e)
    finally:
        if tab is not None:
            out["console_errors"], out["dialogs"] = tab.console_errors, tab.dialogs
            try:
                tab.ws.close()
            except Exception:
                pass
        if proc is not None:
            stop_browser(proc)
        if profile is not None:
            remove_profile(profile)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--size", default="1400,2200")
    p.add_argument("steps", nargs="+")
    a = p.parse_args()
    out = run(a.steps, a.timeout, a.size)
    print(json.dumps(out))
    return 0 if out["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main())
