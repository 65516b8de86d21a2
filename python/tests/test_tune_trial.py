"""Unit tests of tune_trial (python/tune_trial): run with

    python3 -m unittest discover -s python/tests

CTest runs them as python_tune_trial_unittest (tests/python/CMakeLists.txt)
with TUNE_METRIC_LINE_PROBE naming a tool that runs tune's own C++
metric-line rule (tests/python/metric_line_probe.cc): every line report()
prints is then read back by the real parser. Without it those cases skip.
"""

from __future__ import annotations

import contextlib
import fractions
import io
import math
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
sys.path.insert(0, PACKAGE_ROOT)

import tune_trial  # noqa: E402

PROBE = os.environ.get("TUNE_METRIC_LINE_PROBE", "")

# Variables that decide what tune_trial does; each test starts without them.
TUNE_VARS = ["TUNE_TRIAL_ID", "TUNE_PARAMS", "TUNE_TRIAL_DIR", "TUNE_RESUME_FROM", "RANK", "LOCAL_RANK"]


def clean_env(**values: str) -> mock._patch:
    env = {k: v for k, v in os.environ.items() if k not in TUNE_VARS}
    env.update(values)
    return mock.patch.dict(os.environ, env, clear=True)


def printed(step: int, **metrics) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        tune_trial.report(step, **metrics)
    return out.getvalue()


def probe(lines: list[str]) -> list[str]:
    """The real parser's reading of each line: '-' or '@step=N\\tname=value...'."""
    r = subprocess.run([PROBE], input="".join(line + "\n" for line in lines), capture_output=True,
                       text=True, timeout=30, check=True)
    return r.stdout.splitlines()


def parsed(probe_line: str) -> dict[str, float]:
    out = {}
    for pair in probe_line.split("\t"):
        name, _, value = pair.partition("=")
        out[name] = float(value)
    return out


class ParamsTest(unittest.TestCase):
    def test_outside_a_trial_the_defaults(self):
        with clean_env(TUNE_PARAMS='{"lr": 0.5}'):  # no TUNE_TRIAL_ID: not a trial
            self.assertFalse(tune_trial.in_trial())
            self.assertIsNone(tune_trial.trial_id())
            self.assertEqual(tune_trial.params(), {})
            d = {"lr": 1e-3, "r": 8}
            p = tune_trial.params(d)
            self.assertEqual(p, d)
            p["lr"] = 2.0
            self.assertEqual(d["lr"], 1e-3)  # a copy

    def test_inside_typed_and_defaults_fill_missing_keys(self):
        # What tune writes (core/param.cc ParamsToJson): floats keep a point.
        text = '{"batch": 16, "lr": 1.0, "wd": 1e-05, "opt": "adamw", "bias": true, "x": null}'
        with clean_env(TUNE_TRIAL_ID="7", TUNE_PARAMS=text):
            self.assertTrue(tune_trial.in_trial())
            self.assertEqual(tune_trial.trial_id(), 7)
            p = tune_trial.params({"lr": 0.1, "epochs": 3})
            self.assertEqual(p, {"batch": 16, "lr": 1.0, "wd": 1e-05, "opt": "adamw", "bias": True,
                                 "x": None, "epochs": 3})
            self.assertIs(type(p["batch"]), int)
            self.assertIs(type(p["lr"]), float)
            self.assertIs(type(p["bias"]), bool)
            self.assertIs(type(p["opt"]), str)

    def test_bad_params_raise(self):
        for text in ["[1, 2]", "{lr: 1}", '"x"']:
            with clean_env(TUNE_TRIAL_ID="0", TUNE_PARAMS=text), self.subTest(text=text):
                with self.assertRaises(ValueError):
                    tune_trial.params()

    def test_missing_params_in_a_trial_are_the_defaults(self):
        with clean_env(TUNE_TRIAL_ID="0"):
            self.assertEqual(tune_trial.params({"a": 1}), {"a": 1})


class ReportTest(unittest.TestCase):
    def test_format(self):
        with clean_env():
            self.assertEqual(printed(3, loss=0.25), "step=3 loss=0.25\n")
            self.assertEqual(printed(0, acc=1, ok=True, bad=False), "step=0 acc=1 ok=1 bad=0\n")
            self.assertEqual(printed(5, a=float("nan"), b=float("inf"), c=-float("inf"), d=1e-05),
                             "step=5 a=nan b=inf c=-inf d=1e-05\n")
            self.assertEqual(printed(1, **{"eval/loss": 2.0, "train.x-y_z": -3}),
                             "step=1 eval/loss=2.0 train.x-y_z=-3\n")
            self.assertEqual(printed(9), "step=9\n")

    def test_refusals_print_nothing(self):
        bad_values = [("loss", "0.5"), ("loss", None), ("loss", [1.0]), ("loss", 1 + 2j), ("loss", b"1")]
        bad_names = ["a b", "a=b", "é", "loss\n", "a,b", "", "a\tb", "ñame"]
        with clean_env():
            for name, value in bad_values:
                with self.subTest(value=value), self.assertRaises(ValueError):
                    printed(1, **{name: value})
            for name in bad_names:
                with self.subTest(name=name), self.assertRaises(ValueError):
                    printed(1, **{name: 1.0})
            for step in [1.0, "3", True, None, 2**53 + 1, -(2**53) - 1]:
                with self.subTest(step=step), self.assertRaises(ValueError):
                    printed(step, loss=1.0)
            # Nothing was printed by any refusal.
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                with self.assertRaises(ValueError):
                    tune_trial.report(1, good=1.0, **{"b d": 2.0})
            self.assertEqual(out.getvalue(), "")

    def test_only_rank_zero_prints(self):
        with clean_env(RANK="1", LOCAL_RANK="1"):
            self.assertEqual(printed(3, loss=0.25), "")
            with self.assertRaises(ValueError):  # still checked on every rank
                printed(3, **{"a b": 1.0})
        with clean_env(RANK="0", LOCAL_RANK="0"):
            self.assertEqual(printed(3, loss=0.25), "step=3 loss=0.25\n")
        with clean_env(RANK="0", LOCAL_RANK="1"):  # a second node's rank 0 is RANK 0 only
            self.assertEqual(printed(3, loss=0.25), "step=3 loss=0.25\n")

    @unittest.skipUnless(PROBE, "TUNE_METRIC_LINE_PROBE not set (CTest sets it)")
    def test_the_real_parser_reads_what_report_printed(self):
        cases = [
            (0, {"loss": 0.25}),
            (7, {"loss": 0.1, "acc": 1, "flag": True, "off": False}),
            (-5, {"x": -2.5e300, "y": 1e-320, "z": 123456789012345678}),
            (2**53, {"a": float("nan"), "b": float("inf"), "c": -float("inf")}),
            (3, {"eval/loss": 1.5, "train.x-y_z": 2, "big": 10**400, "third": fractions.Fraction(1, 3)}),
            (12, {"lr": 3e-4, "tiny": 5e-324, "neg0": -0.0}),
        ]
        try:
            import numpy  # noqa: F401  (Debian's python3-numpy comes with python3-torch)
            cases.append((4, {"np32": numpy.float32(0.1), "np64": numpy.int64(-7), "npb": numpy.float64(2.5)}))
        except ImportError:
            pass
        with clean_env():
            lines = [printed(step, **m).rstrip("\n") for step, m in cases]
        got = probe(lines)
        self.assertEqual(len(got), len(cases))
        for (step, metrics), line, reading in zip(cases, lines, got):
            with self.subTest(line=line):
                values = parsed(reading)
                self.assertEqual(values.pop("@step"), step)  # the report's step (an int64)
                self.assertEqual(values.pop("step"), step)  # and the metric
                want = {}
                for k, v in metrics.items():
                    try:
                        want[k] = float(v)
                    except OverflowError:
                        want[k] = math.inf  # the parser saturates to infinity
                self.assertEqual(set(values), set(want))
                for k, v in want.items():
                    if math.isnan(v):
                        self.assertTrue(math.isnan(values[k]), k)
                    else:
                        self.assertEqual(values[k], v, k)

    @unittest.skipUnless(PROBE, "TUNE_METRIC_LINE_PROBE not set (CTest sets it)")
    def test_what_report_refuses_the_parser_would_misread(self):
        # Printed naively, each of these is not read as {name: value}.
        naive = [("a b", "1"), ("é", "1"), ("a,b", "1"), ("loss", "0.5x"), ("loss", "True"),
                 ("loss", "[1.0]"), ("loss", "1+2j"), ("loss", "0x10")]
        got = probe([f"{name}={value}" for name, value in naive])
        for (name, value), reading in zip(naive, got):
            with self.subTest(name=name, value=value):
                values = {} if reading == "-" else parsed(reading)
                self.assertNotIn(name, values)
        # And a value report() would refuse (a string) is not a metric at all.
        with clean_env(), self.assertRaises(ValueError):
            printed(1, loss="0.5")


class CheckpointTest(unittest.TestCase):
    def test_outside_a_trial_the_current_directory(self):
        with clean_env():
            self.assertEqual(tune_trial.trial_dir(), os.getcwd())
            self.assertEqual(tune_trial.checkpoint_dir(30), os.path.join(os.getcwd(), "checkpoint-30"))
            self.assertIsNone(tune_trial.resume_from())
            self.assertIsNone(tune_trial.resume_step())
        with tempfile.TemporaryDirectory() as d, clean_env(TUNE_TRIAL_DIR=d):
            self.assertEqual(tune_trial.trial_dir(), d)

    def test_resume_from_real_folders(self):
        with tempfile.TemporaryDirectory() as d:
            ckpt = os.path.join(d, "checkpoint-40")
            with clean_env(TUNE_TRIAL_ID="2", TUNE_TRIAL_DIR=d, TUNE_RESUME_FROM=ckpt):
                self.assertEqual(tune_trial.checkpoint_dir(40), ckpt)
                self.assertIsNone(tune_trial.resume_from())  # not there yet
                self.assertIsNone(tune_trial.resume_step())
                os.mkdir(ckpt)
                self.assertEqual(tune_trial.resume_from(), ckpt)
                self.assertEqual(tune_trial.resume_step(), 40)
            with clean_env(TUNE_TRIAL_ID="2", TUNE_TRIAL_DIR=d, TUNE_RESUME_FROM=ckpt + "/"):
                self.assertEqual(tune_trial.resume_step(), 40)
            with clean_env(TUNE_TRIAL_ID="2", TUNE_TRIAL_DIR=d, TUNE_RESUME_FROM=""):
                self.assertIsNone(tune_trial.resume_from())
            other = os.path.join(d, "donor-copy")
            os.mkdir(other)
            with clean_env(TUNE_TRIAL_ID="2", TUNE_RESUME_FROM=other):
                self.assertEqual(tune_trial.resume_from(), other)
                self.assertIsNone(tune_trial.resume_step())  # no step in its name
            afile = os.path.join(d, "checkpoint-9")
            open(afile, "w").close()
            with clean_env(TUNE_TRIAL_ID="2", TUNE_RESUME_FROM=afile):
                self.assertIsNone(tune_trial.resume_from())  # a file is no checkpoint

    def test_checkpoint_dir_refuses_bad_steps(self):
        for step in [-1, 1.5, "3", True]:
            with self.subTest(step=step), self.assertRaises(ValueError):
                tune_trial.checkpoint_dir(step)


# A trial-like child: signals readiness, then steps until told to stop.
CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    import signal
    import tune_trial
    mode = sys.argv[1]
    if mode == "chain":
        signal.signal(signal.SIGTERM, lambda s, f: print("previous handler ran", flush=True))
    if mode != "plain":
        tune_trial.install_signal_handler()
    print("ready", flush=True)
    step = 0
    deadline = time.time() + 20
    while time.time() < deadline:
        step += 1
        time.sleep(0.01)
        if mode != "plain" and tune_trial.should_stop():
            time.sleep(0.5)  # saving a checkpoint: a second SIGTERM comes meanwhile
            print("stopped cleanly at step", step, flush=True)
            sys.exit(0)
    print("never stopped", flush=True)
    sys.exit(3)
""")


class SignalTest(unittest.TestCase):
    def run_child(self, mode: str, signals: int = 1) -> tuple[int, str, float]:
        proc = subprocess.Popen([sys.executable, "-c", CHILD.format(root=PACKAGE_ROOT), mode],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            self.assertEqual(proc.stdout.readline().strip(), "ready")
            start = time.monotonic()
            for _ in range(signals):
                proc.send_signal(signal.SIGTERM)
                time.sleep(0.1)
            out, _ = proc.communicate(timeout=15)
            return proc.returncode, out, time.monotonic() - start
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()

    def test_sigterm_sets_the_flag_and_the_process_stops_itself(self):
        code, out, took = self.run_child("handler")
        self.assertEqual(code, 0, out)
        self.assertIn("stopped cleanly at step", out)
        self.assertLess(took, 5)  # well within the default trial.stop_grace_s

    def test_a_second_sigterm_only_sets_the_flag_again(self):
        code, out, _ = self.run_child("handler", signals=2)
        self.assertEqual(code, 0, out)
        self.assertIn("stopped cleanly", out)

    def test_a_previous_python_handler_is_chained(self):
        code, out, _ = self.run_child("chain")
        self.assertEqual(code, 0, out)
        self.assertIn("previous handler ran", out)
        self.assertIn("stopped cleanly", out)

    def test_importing_installs_nothing(self):
        code, out, _ = self.run_child("plain")
        self.assertEqual(code, -signal.SIGTERM, out)  # SIGTERM still ends it at once
        self.assertNotIn("stopped cleanly", out)

    def test_should_stop_is_false_without_a_signal(self):
        before = signal.getsignal(signal.SIGTERM)
        try:
            self.assertFalse(tune_trial.should_stop())
            self.assertIs(signal.getsignal(signal.SIGTERM), tune_trial._on_sigterm)
        finally:  # leave the test runner's own SIGTERM as it was
            signal.signal(signal.SIGTERM, before)
            tune_trial._installed = False


if __name__ == "__main__":
    unittest.main()
