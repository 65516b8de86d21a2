#!/usr/bin/env python3
"""Ray Tune's Population Based Training and random search on pbt_toy_trial's toy.

The toy is experiments/pbt_toy_trial.cc (Ray's pbt_function example with
counter-based noise), reimplemented below with the same formulas, operation
for operation, so that a trial with the same (seed, lr) gives the same
scores bit for bit (--check-toy compares against the C++ binary).

Both runs: population 8 (num_samples), lr ~ uniform(0.0001, 0.02) as in
Ray's example's hyperparam_mutations, every trial to 300 steps (or until its
accuracy passes 200, Ray's `done`), so equal total steps. PBT as in Ray's
example (time_attr training_iteration, perturbation_interval 5, checkpoints
every 5 steps, mutations lr and some_other_factor [1, 2], the other
arguments Ray's defaults, reuse_actors=True as in the example: without
it every pause and exploit starts a new actor). Random search: BasicVariantGenerator, FIFO.
A trial's value is its last score (Ray's ResultGrid default scope, and the
experiments' objective.scope); a run's value is its best trial's.
ray.init(num_cpus=2) by default: two trials at a time, the others pause
(PBT) or wait; --num-cpus 8 runs the whole population at once.

  $(bench/pbt_ray_venv.sh) bench/pbt_ray.py [--seeds 5] [--first-seed 0]
      [--population 8] [--max-t 300] [--perturbation-interval 5] [--only pbt|random]
      [--num-cpus 2]
  python3 bench/pbt_ray.py --check-toy build/bin/pbt_toy_trial   # no Ray needed

Prints JSON: per seed the best score and wall time of each run, and the
medians and the PBT/random ratio of the medians.
"""
import argparse
import json
import math
import os
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import time

MASK = (1 << 64) - 1
MIDPOINT, Q_TOLERANCE, NOISE_LEVEL = 100.0, 3.0, 2.0


def mix64(z):
    # SplitMix64's output function, as Mix64 in pbt_toy_trial.cc.
    z &= MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def toy_key(seed, lr):
    bits = struct.unpack("<Q", struct.pack("<d", lr))[0]
    return mix64((seed & MASK) ^ mix64(bits))


def uniform(key, step, j):
    return (mix64(key ^ mix64(step * 4 + j)) >> 11) * 2.0 ** -53


def toy_step(acc, lr, key, step):
    """The accuracy after step `step` (1-based) from `acc`: pbt_toy_trial's loop body."""
    if acc < MIDPOINT:
        optimal_lr = 0.01 * acc / MIDPOINT
    else:
        optimal_lr = 0.01 - 0.01 * (acc - MIDPOINT) / MIDPOINT
    optimal_lr = min(0.01, max(0.001, optimal_lr))
    q_err = max(lr, optimal_lr) / min(lr, optimal_lr)
    u = uniform(key, step, 0)
    if q_err < Q_TOLERANCE:
        acc += (1.0 / q_err) * u
    elif lr > optimal_lr:
        acc -= (q_err - Q_TOLERANCE) * u
    u1, u2 = uniform(key, step, 1), uniform(key, step, 2)
    n = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)
    return max(0.0, acc + NOISE_LEVEL * n)


def check_toy(binary):
    """Runs the C++ toy for a few (lr, seed) and compares every score."""
    bad = 0
    for lr in ("0.0001", "0.002", "0.0035", "0.007", "0.019"):
        for seed in (0, 7):
            with tempfile.TemporaryDirectory(prefix="pbt-toy-check-") as d:
                out = subprocess.run([binary, "--lr", lr, "--seed", str(seed), "--checkpoint-dir", d],
                                     check=True, capture_output=True, text=True).stdout.split("\n")
            acc, key = 0.0, toy_key(seed, float(lr))
            for line in out:
                if not line:
                    continue
                fields = dict(kv.split("=") for kv in line.split())
                step = int(fields["step"])
                acc = toy_step(acc, float(lr), key, step)
                if "%.12g" % acc != fields["score"]:
                    print(f"lr {lr} seed {seed} step {step}: python {acc!r}, C++ {fields['score']}")
                    bad += 1
                    break
    print("toy check:", "identical" if bad == 0 else f"{bad} differences")
    return 1 if bad else 0


def make_trainable(max_t, checkpoint_every, done_at):
    from ray import tune

    def pbt_toy(config):
        lr, seed, step, acc = config["lr"], config["seed"], 0, 0.0
        checkpoint = tune.get_checkpoint()
        if checkpoint:
            with checkpoint.as_directory() as d:
                with open(os.path.join(d, "state.json")) as f:
                    state = json.load(f)
            step, acc, seed = state["step"], state["acc"], state["seed"]
        key = toy_key(seed, lr)
        while step < max_t:
            step += 1
            acc = toy_step(acc, lr, key, step)
            metrics = {"score": acc, "lr": lr, "step": step}
            if step % checkpoint_every == 0:
                with tempfile.TemporaryDirectory() as d:
                    with open(os.path.join(d, "state.json"), "w") as f:
                        json.dump({"step": step, "acc": acc, "seed": seed, "lr": lr}, f)
                    tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(d))
            else:
                tune.report(metrics)
            if done_at > 0 and acc > done_at:
                return

    return pbt_toy


def run_one(kind, seed, args, storage):
    from ray import tune
    from ray.tune.schedulers import FIFOScheduler, PopulationBasedTraining
    from ray.tune.search.basic_variant import BasicVariantGenerator

    random.seed(seed)  # PBT's explore draws from `random`
    space = {"lr": tune.uniform(0.0001, 0.02), "some_other_factor": tune.choice([1, 2]),
             "seed": tune.randint(0, 1 << 30)}
    if kind == "pbt":
        scheduler = PopulationBasedTraining(
            time_attr="training_iteration", perturbation_interval=args.perturbation_interval,
            hyperparam_mutations={"lr": tune.uniform(0.0001, 0.02), "some_other_factor": [1, 2]})
    else:
        scheduler = FIFOScheduler()
    tuner = tune.Tuner(
        make_trainable(args.max_t, args.perturbation_interval, args.done_at),
        param_space=space,
        tune_config=tune.TuneConfig(metric="score", mode="max", num_samples=args.population,
                                    scheduler=scheduler, reuse_actors=True,
                                    search_alg=BasicVariantGenerator(random_state=seed)),
        run_config=tune.RunConfig(name=f"pbt-toy-{kind}-{seed}", storage_path=storage, verbose=0,
                                  stop={"training_iteration": args.max_t},
                                  checkpoint_config=tune.CheckpointConfig(num_to_keep=2)),
    )
    t0 = time.time()
    results = tuner.fit()
    wall = time.time() - t0
    last = [r.metrics["score"] for r in results if r.metrics and "score" in r.metrics]
    steps = [r.metrics.get("step", 0) for r in results if r.metrics]
    errors = sum(1 for r in results if r.error)
    return {"best": max(last), "trials": len(last), "errors": errors, "wall_s": round(wall, 2),
            "last_steps": steps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--population", type=int, default=8)
    ap.add_argument("--max-t", type=int, default=300)
    ap.add_argument("--perturbation-interval", type=int, default=5)
    ap.add_argument("--done-at", type=float, default=200.0)
    ap.add_argument("--only", choices=["pbt", "random"])
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--check-toy", metavar="BINARY")
    args = ap.parse_args()
    if args.check_toy:
        return check_toy(args.check_toy)

    import ray
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    kinds = [args.only] if args.only else ["pbt", "random"]
    per_seed = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(prefix="pbt-ray-") as storage:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for kind in kinds:
                r = run_one(kind, seed, args, storage)
                r["seed"] = seed
                per_seed[kind].append(r)
                print(json.dumps({"kind": kind, **r}), file=sys.stderr, flush=True)
    out = {"ray": ray.__version__, "population": args.population, "max_t": args.max_t,
           "perturbation_interval": args.perturbation_interval, "num_cpus": args.num_cpus, "runs": per_seed}
    for kind in kinds:
        out[f"median_{kind}"] = statistics.median(r["best"] for r in per_seed[kind])
        out[f"median_wall_s_{kind}"] = statistics.median(r["wall_s"] for r in per_seed[kind])
    if len(kinds) == 2:
        out["ratio_pbt_random"] = out["median_pbt"] / out["median_random"]
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
