#!/usr/bin/env python3
"""Records Ray Tune's scheduler decisions on scripted result sequences.

Drives ray.tune.schedulers.AsyncHyperBandScheduler and MedianStoppingRule
directly, the way Ray's TuneController does: on_trial_add when a trial
starts, on_trial_result for every report, and on_trial_complete with the
trial's last result when the scheduler stopped it (stop_trial) or when it
ended on its own; results after a STOP are dropped. Every decision is written
to a JSON fixture that tests/schedulers/golden_test.cc replays against our
AshaScheduler and MedianStoppingRule.

Needs Ray (only to regenerate the fixtures; the tests do not):
    python3 -m venv venv && venv/bin/pip install "ray[tune]"
    venv/bin/python make_golden.py        # writes *.json next to this file
A NaN objective is written as null.
"""
import json
import math
import os
import random
import sys

import numpy as np
import ray
from ray.tune.schedulers import AsyncHyperBandScheduler, MedianStoppingRule

HERE = os.path.dirname(os.path.abspath(__file__))


class FakeTrial:
    def __init__(self, number):
        self.trial_id = "trial_%d" % number
        self.number = number

    def __hash__(self):
        return hash(self.trial_id)

    def __eq__(self, other):
        return isinstance(other, FakeTrial) and other.trial_id == self.trial_id


class FakeController:
    """MedianStoppingRule asks for waiting trials before pausing: none here."""

    def get_live_trials(self):
        return []


def curve(rng, steps, nan_rate=0.0, ties=False):
    final = rng.uniform(0.2, 1.0)
    a = rng.uniform(0.2, 2.0)
    tau = rng.uniform(2.0, 30.0)
    out = []
    for t in steps:
        v = final + a * math.exp(-t / tau) + rng.gauss(0, 0.03)
        v = round(v, 1) if ties else round(v, 6)
        if nan_rate and rng.random() < nan_rate:
            v = float("nan")
        out.append((t, v))
    return out


def interleave(rng, curves, concurrency):
    """Yields ('add', n), ('result', n, t, v), ('end', n) like a runner with
    `concurrency` slots that picks a random running trial for each report."""
    waiting = list(range(len(curves)))
    running = {}
    while waiting or running:
        while waiting and len(running) < concurrency:
            n = waiting.pop(0)
            running[n] = list(curves[n])
            yield ("add", n)
        n = rng.choice(sorted(running))
        if running[n]:
            t, v = running[n].pop(0)
            yield ("result", n, t, v)
        else:
            del running[n]
            yield ("end", n)


def enc(v):
    return None if isinstance(v, float) and math.isnan(v) else v


def run_asha(name, opts, curves, seed, concurrency=4):
    np.random.seed(seed)
    mode = opts["mode"]
    sched = AsyncHyperBandScheduler(
        time_attr="step", metric="obj", mode=mode, max_t=opts["max_t"],
        grace_period=opts["grace_period"], reduction_factor=opts["reduction_factor"],
        brackets=opts["brackets"], stop_last_trials=opts.get("stop_last_trials", True))
    rng = random.Random(seed)
    trials = {}
    last = {}
    stopped = set()
    events = []
    controller = FakeController()

    def rung_of(trial, before):
        bracket = sched._trial_info[trial.trial_id]
        for milestone, recorded in bracket._rungs:
            if trial.trial_id in recorded and trial.trial_id not in before.get(milestone, ()):
                return milestone
        return None

    for ev in interleave(rng, curves, concurrency):
        n = ev[1]
        if ev[0] == "add":
            trials[n] = FakeTrial(n)
            sched.on_trial_add(controller, trials[n])
            bracket = sched._brackets.index(sched._trial_info[trials[n].trial_id])
            events.append({"op": "add", "trial": n, "bracket": bracket})
        elif ev[0] == "result":
            if n in stopped:
                continue  # the controller drops results after a STOP
            _, _, t, v = ev
            trial = trials[n]
            bracket = sched._trial_info[trial.trial_id]
            before = {m: set(r) for m, r in bracket._rungs}
            result = {"step": t, "obj": v}
            action = sched.on_trial_result(controller, trial, result)
            last[n] = result
            e = {"op": "result", "trial": n, "t": t, "value": enc(v), "action": action}
            if action == "STOP":
                e["rung"] = rung_of(trial, before)
            events.append(e)
            if action == "STOP":
                stopped.add(n)
                sched.on_trial_complete(controller, trial, last[n])
                events.append({"op": "complete", "trial": n})
        elif ev[0] == "end" and n not in stopped:
            if n in last:
                sched.on_trial_complete(controller, trials[n], last[n])
            events.append({"op": "complete", "trial": n})
    rungs = [[float(m) for m, _ in reversed(b._rungs)] for b in sched._brackets]
    cutoffs = []
    for s, b in enumerate(sched._brackets):
        for m, recorded in b._rungs:
            c = b.cutoff(recorded)
            cutoffs.append({"bracket": s, "milestone": float(m),
                            "cutoff": None if c is None or math.isnan(c) else float(c),
                            "recorded": len(recorded)})
    return {"name": name, "scheduler": "asha", "options": opts, "numpy_seed": seed,
            "milestones": rungs, "events": events, "final_cutoffs": cutoffs}


def run_median(name, opts, curves, seed, concurrency=4):
    sched = MedianStoppingRule(
        time_attr="step", metric="obj", mode=opts["mode"],
        grace_period=opts["grace_period"],
        min_samples_required=opts["min_samples_required"],
        hard_stop=opts.get("hard_stop", True))
    rng = random.Random(seed)
    trials = {}
    last = {}
    stopped = set()
    events = []
    controller = FakeController()
    for ev in interleave(rng, curves, concurrency):
        n = ev[1]
        if ev[0] == "add":
            trials[n] = FakeTrial(n)
            sched.on_trial_add(controller, trials[n])
            events.append({"op": "add", "trial": n})
        elif ev[0] == "result":
            if n in stopped:
                continue
            _, _, t, v = ev
            result = {"step": t, "obj": v}
            action = sched.on_trial_result(controller, trials[n], result)
            last[n] = result
            events.append({"op": "result", "trial": n, "t": t, "value": enc(v),
                           "action": action})
            if action == "STOP":
                stopped.add(n)
                sched.on_trial_complete(controller, trials[n], last[n])
                events.append({"op": "complete", "trial": n})
        elif ev[0] == "end" and n not in stopped:
            if n in last:
                sched.on_trial_complete(controller, trials[n], last[n])
            events.append({"op": "complete", "trial": n})
    return {"name": name, "scheduler": "median", "options": opts, "events": events}


def rung_table():
    """Number of rungs per bracket for many (max_t, grace, rf): np.log in
    Ray's int(log(max_t/min_t)/log(rf) - s + 1) must agree with ours."""
    rows = []
    for rf in [2, 3, 4, 1.5, 2.5, 10]:
        for grace in [1, 2, 3, 5, 10, 20]:
            for max_t in range(grace, 301):
                sched = AsyncHyperBandScheduler(max_t=max_t, grace_period=grace,
                                                reduction_factor=rf, brackets=5,
                                                metric="obj", mode="max")
                rows.append([max_t, grace, rf, [len(b._rungs) for b in sched._brackets]])
    return rows


def numpy_stats():
    """np.nanpercentile, np.mean and np.median on random vectors, exactly as
    Ray calls them (the C++ versions must agree to the last bit)."""
    rng = random.Random(99)
    rows = []
    for n in list(range(0, 20)) + [31, 64, 127, 128, 129, 200, 257, 600]:
        for _ in range(3):
            vals = [rng.uniform(-5, 5) * 10 ** rng.randint(-3, 3) for _ in range(n)]
            with_nan = [float("nan") if rng.random() < 0.2 else v for v in vals]
            row = {"values": vals, "with_nan": [enc(v) for v in with_nan],
                   "mean": float(np.mean(vals)) if vals else None,
                   "median": float(np.median(vals)) if vals else None,
                   "percentiles": []}
            for rf in [2, 3, 4, 1.5, 2.5, 7]:
                p = (1 - 1 / rf) * 100
                a = np.nanpercentile(with_nan, p) if any(not math.isnan(v) for v in with_nan) \
                    else float("nan")
                row["percentiles"].append([rf, enc(float(a))])
            rows.append(row)
    return rows


def main():
    cases = []
    r = random.Random(1)
    every = list(range(1, 28))
    cases.append(run_asha("asha_max_b1", dict(mode="max", max_t=27, grace_period=1,
                          reduction_factor=3, brackets=1),
                          [[(t, -v) for t, v in curve(r, every)] for _ in range(12)], 11))
    cases.append(run_asha("asha_min_b1", dict(mode="min", max_t=27, grace_period=1,
                          reduction_factor=3, brackets=1),
                          [curve(r, every) for _ in range(12)], 12))
    sevens = list(range(7, 91, 7))
    cases.append(run_asha("asha_min_skip7", dict(mode="min", max_t=81, grace_period=1,
                          reduction_factor=3, brackets=1),
                          [curve(r, sevens) for _ in range(14)], 13))
    cases.append(run_asha("asha_max_skip7_grace2", dict(mode="max", max_t=81, grace_period=2,
                          reduction_factor=3, brackets=1),
                          [[(t, -v) for t, v in curve(r, sevens)] for _ in range(14)], 14))
    full81 = list(range(1, 82))
    cases.append(run_asha("asha_min_b3", dict(mode="min", max_t=81, grace_period=1,
                          reduction_factor=3, brackets=3),
                          [curve(r, full81) for _ in range(16)], 15))
    cases.append(run_asha("asha_max_b3_skip5", dict(mode="max", max_t=81, grace_period=1,
                          reduction_factor=3, brackets=3),
                          [[(t, -v) for t, v in curve(r, range(5, 86, 5))] for _ in range(16)],
                          16))
    # Default reduction factor 4; trials whose program ends before max_t.
    cases.append(run_asha("asha_min_rf4_short", dict(mode="min", max_t=100, grace_period=1,
                          reduction_factor=4, brackets=1),
                          [curve(r, range(3, 3 * r.randint(5, 40), 3)) for _ in range(12)], 17))
    cases.append(run_asha("asha_min_rf2.5_ties", dict(mode="min", max_t=50, grace_period=2,
                          reduction_factor=2.5, brackets=2),
                          [curve(r, range(1, 51), ties=True) for _ in range(12)], 18))
    cases.append(run_asha("asha_min_nan", dict(mode="min", max_t=27, grace_period=1,
                          reduction_factor=3, brackets=1),
                          [curve(r, every, nan_rate=0.15) for _ in range(10)], 19))
    cases.append(run_asha("asha_max_no_stop_last", dict(mode="max", max_t=27, grace_period=1,
                          reduction_factor=3, brackets=1, stop_last_trials=False),
                          [[(t, -v) for t, v in curve(r, range(1, 40))] for _ in range(10)], 20))

    cases.append(run_median("median_min", dict(mode="min", grace_period=3,
                            min_samples_required=3),
                            [curve(r, range(1, 21)) for _ in range(12)], 21))
    cases.append(run_median("median_max", dict(mode="max", grace_period=3,
                            min_samples_required=3),
                            [[(t, -v) for t, v in curve(r, range(1, 21))] for _ in range(12)], 22))
    cases.append(run_median("median_min_sparse", dict(mode="min", grace_period=4,
                            min_samples_required=2),
                            [curve(r, range(r.randint(1, 6), 41, r.choice([3, 5, 7])))
                             for _ in range(12)], 23))
    cases.append(run_median("median_min_long", dict(mode="min", grace_period=1,
                            min_samples_required=3),
                            [curve(r, range(1, 61)) for _ in range(10)], 24, concurrency=3))
    cases.append(run_median("median_max_nan_ties", dict(mode="max", grace_period=2,
                            min_samples_required=1),
                            [[(t, -v) for t, v in curve(r, range(1, 16), nan_rate=0.1,
                                                         ties=True)] for _ in range(10)], 25))
    cases.append(run_median("median_min_soft", dict(mode="min", grace_period=3,
                            min_samples_required=3, hard_stop=False),
                            [curve(r, range(1, 21)) for _ in range(10)], 26))

    meta = {"ray_version": ray.__version__, "numpy_version": np.__version__,
            "python": sys.version.split()[0]}
    with open(os.path.join(HERE, "scheduler_decisions.json"), "w") as f:
        json.dump({"generated_by": "make_golden.py", **meta, "cases": cases}, f, indent=0)
    with open(os.path.join(HERE, "asha_rungs.json"), "w") as f:
        json.dump({"generated_by": "make_golden.py", **meta, "rows": rung_table()}, f)
    with open(os.path.join(HERE, "numpy_stats.json"), "w") as f:
        json.dump({"generated_by": "make_golden.py", **meta, "rows": numpy_stats()}, f)
    for c in cases:
        acts = [e["action"] for e in c["events"] if e["op"] == "result"]
        print(c["name"], len(acts), "results", acts.count("STOP"), "stops",
              acts.count("PAUSE"), "pauses")


if __name__ == "__main__":
    main()
