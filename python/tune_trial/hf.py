"""tune_trial.hf: a Hugging Face `transformers.TrainerCallback` that makes a
`Trainer` script a `tune` trial (docs/from-ray-and-optuna.md shows it next
to Ray's RayTrainReportCallback and Optuna's integration).

    import tune_trial
    from tune_trial.hf import TuneCallback

    p = tune_trial.params({"learning_rate": 1e-3})
    args = TrainingArguments(output_dir=tune_trial.trial_dir(),
                             learning_rate=p["learning_rate"],
                             eval_strategy="steps", eval_steps=10,
                             save_strategy="steps", save_steps=10,
                             save_total_limit=2, report_to="none", ...)
    trainer = Trainer(..., args=args, callbacks=[TuneCallback()])
    trainer.train(resume_from_checkpoint=tune_trial.resume_from())
    if tune_trial.should_stop():
        sys.exit(0)                    # pruned or paused: nothing more to do

Importing this module imports transformers (`import tune_trial` does not).
What the callback does, event by event (transformers 5.x, Trainer's
`_inner_training_loop` and `_maybe_log_save_evaluate`, whose order within a
step is: optimizer step, on_step_end, log, evaluate, save):

- **Metric names** are kept exactly as Trainer logs them, so the objective
  of an experiment is `eval_loss` (or `eval_<your metric>`), the training
  loss `loss`. Each report is `step=<state.global_step> name=value ...`.
- **on_log** reports the numeric entries of Trainer's training logs
  (`loss`, `grad_norm`, `learning_rate`, `epoch`, and the `train_*` summary
  at the end); the logs of an evaluation, which Trainer also passes through
  on_log, are left to on_evaluate.
- **on_evaluate** reports the eval metrics at `state.global_step`.
- **Order.** When Trainer is going to save a checkpoint in the step (it
  logs, then evaluates, then saves), the step's reports (every metric line,
  not only the objective's: each moves the trial's last step) wait for
  **on_save**, so that they follow the step's `checkpoint-<step>` folder.
  `tune` continues a trial from the newest checkpoint at or before the last
  step it recorded (docs/architecture.md, section 4.7), and a PBT exploit
  copies the donor's checkpoint of the step it was judged at: both then
  exist and are complete. (Trainer writes the folder under its final name,
  not by a rename; a folder newer than the last reported step is never
  chosen, which is why the order matters.) Reports still waiting when
  training ends are printed by on_train_end.
- **Stopping.** The SIGTERM handler (tune_trial.install_signal_handler) is
  installed when the Trainer is built (on_init_end). When
  tune_trial.should_stop() is true, on_step_begin and on_step_end set
  `control.should_training_stop` and clear `should_evaluate`,
  `should_save` and `should_log`, so Trainer leaves its loop after the step
  in progress without evaluating or saving (what a stopped trial reports no
  longer counts, and a checkpoint newer than its last counted report is
  never used). The process must then end within `trial.stop_grace_s`
  (default 5 s): one training step, plus an evaluation that had already
  begun, must fit in it. Check should_stop() after trainer.train() returns
  and exit instead of evaluating or saving again.
- **Continuing after a PBT exploit** (on_train_begin, only when Trainer
  restored a checkpoint: state.global_step > 0). Trainer's
  `_load_optimizer_and_scheduler` loads `optimizer.pt` (the param groups
  with their hyperparameters, and Adam's moments) and `scheduler.pt`
  (`base_lrs`, `last_epoch`, `_last_lr`; the schedule's lambdas are
  functions, not state, so warmup and length follow the new arguments), and
  `trainer_state.json` brings back the logging, eval and save intervals;
  on_train_begin fires after all of that. The callback then sets, from the
  new TrainingArguments:
    * every param group's `initial_lr` to `args.learning_rate`, and the
      scheduler's `base_lrs` to it;
    * every param group's `lr` to the schedule's value at the restored step
      with the new base (`base_lr * lr_lambda(last_epoch)` for LambdaLR,
      which every Trainer schedule but reduce_lr_on_plateau is; otherwise
      the restored `lr` scaled by new/old base), and the scheduler's
      `_last_lr` to match (Trainer logs `learning_rate` from it);
    * `weight_decay` of the first param group to `args.weight_decay` when
      the groups are Trainer's own (two groups, the second without decay);
    * `betas` and `eps` to `args.adam_beta1`, `adam_beta2`, `adam_epsilon`
      for Trainer's Adam optimizers (`args.optim` starting with "adam");
    * `state.logging_steps`, `eval_steps`, `save_steps` from the new
      arguments (TrainerState.compute_steps).
  Kept from the checkpoint: the model (adapter) weights, Adam's moments, the
  step, the epoch and the data order (rng_state.pth). PEFT's config comes
  from the model the script builds with the new parameters (Trainer loads
  only the adapter's weights into it), so `lora_alpha` and `lora_dropout`
  may be mutated; `lora_r` may not (the weights' shapes follow it).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Dict, List, Mapping, Tuple

import transformers

import tune_trial

__all__ = ["TuneCallback"]


def _numeric(metrics: Mapping[str, Any]) -> Dict[str, float]:
    """The entries report() takes: real numbers under names of tune's metric
    lines (HF's names are; others are skipped rather than failing a run)."""
    out: Dict[str, float] = {}
    for name, value in metrics.items():
        if hasattr(value, "item") and not isinstance(value, numbers.Real):
            try:
                value = value.item()  # a 0-d tensor or numpy scalar
            except (TypeError, ValueError, RuntimeError):
                continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            continue
        if not tune_trial._NAME.match(name) or name == "step":
            continue
        out[name] = float(value)
    return out


def _unwrap(obj: Any) -> Any:
    # accelerate's AcceleratedScheduler keeps the torch scheduler in
    # .scheduler (its AcceleratedOptimizer proxies param_groups already).
    inner = getattr(obj, "scheduler", None)
    return inner if inner is not None else obj


class TuneCallback(transformers.TrainerCallback):
    """Reports Trainer's metrics as tune metric lines, stops on SIGTERM, and
    makes the new hyperparameters take effect when a trial continues from
    another trial's checkpoint (PBT). See the module's docstring for exactly
    when each happens and what is overridden.

    apply_new_hyperparameters: set False to keep everything the checkpoint
    restored (Trainer's own behaviour).
    """

    def __init__(self, apply_new_hyperparameters: bool = True) -> None:
        self.apply_new_hyperparameters = apply_new_hyperparameters
        self._pending: List[Tuple[int, Dict[str, float]]] = []
        # What on_train_begin changed after a resume (for tests and logs):
        # {"learning_rate": [per group], "weight_decay": ..., ...}.
        self.overridden: Dict[str, Any] = {}

    # --- reports

    def report(self, state, control, **metrics) -> None:
        """Reports `metrics` at state.global_step from any callback event:
        at once, or, when Trainer is going to save checkpoint-<step> in this
        step (control.should_save, which Trainer's flow callback sets in
        on_step_end, before anything is logged, evaluated or saved), right
        after that save, in the order given. Other callbacks that report
        during a step should go through this (train.py's
        OptimizerLrCallback does)."""
        if not state.is_world_process_zero:
            return
        values = _numeric(metrics)
        if not values:
            return
        step = int(state.global_step)
        if control.should_save and not tune_trial.should_stop():
            self._pending.append((step, values))
        else:
            self._flush()
            tune_trial.report(step, **values)

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for step, values in pending:
            tune_trial.report(step, **values)

    def on_log(self, args, state, control, logs=None, **kwargs):
        # Trainer.evaluate() logs its metrics too: on_evaluate reports them.
        if not logs or any(k.startswith("eval_") for k in logs):
            return
        self.report(state, control, **logs)

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        self.report(state, control, **(metrics or {}))

    def on_save(self, args, state, control, **kwargs):
        self._flush()

    def on_train_end(self, args, state, control, **kwargs):
        self._flush()

    # --- stopping

    def on_init_end(self, args, state, control, **kwargs):
        # Before training starts, so a SIGTERM during the model's load or
        # the data's preparation already only sets the flag.
        tune_trial.install_signal_handler()

    def _stop_if_asked(self, control) -> None:
        if tune_trial.should_stop():
            control.should_training_stop = True
            control.should_evaluate = False
            control.should_save = False
            control.should_log = False

    def on_step_begin(self, args, state, control, **kwargs):
        self._stop_if_asked(control)

    def on_step_end(self, args, state, control, **kwargs):
        self._stop_if_asked(control)

    # --- continuing with new hyperparameters

    def on_train_begin(self, args, state, control, optimizer=None, lr_scheduler=None, **kwargs):
        self._stop_if_asked(control)
        if self.apply_new_hyperparameters and state.global_step > 0 and optimizer is not None:
            self.overridden = _apply_arguments(args, state, optimizer, lr_scheduler)


def _apply_arguments(args, state, optimizer, lr_scheduler) -> Dict[str, Any]:
    """Makes `args`' hyperparameters those of the restored optimizer and
    scheduler (the list in the module's docstring). Returns what it set."""
    groups = optimizer.param_groups
    new_lr = float(args.learning_rate)
    sched = _unwrap(lr_scheduler) if lr_scheduler is not None else None
    base_lrs = getattr(sched, "base_lrs", None)
    lambdas = getattr(sched, "lr_lambdas", None)
    last_epoch = getattr(sched, "last_epoch", None)

    lrs = []
    for i, g in enumerate(groups):
        if lambdas is not None and last_epoch is not None and i < len(lambdas):
            lr = new_lr * float(lambdas[i](last_epoch))
        else:
            old_base = None
            if base_lrs is not None and i < len(base_lrs):
                old_base = base_lrs[i]
            elif "initial_lr" in g:
                old_base = g["initial_lr"]
            if old_base and math.isfinite(old_base):
                lr = g["lr"] * new_lr / float(old_base)
            else:
                lr = new_lr
        g["lr"] = lr
        g["initial_lr"] = new_lr
        lrs.append(lr)
    if sched is not None:
        if base_lrs is not None:
            sched.base_lrs = [new_lr for _ in base_lrs]
        if hasattr(sched, "_last_lr"):
            sched._last_lr = list(lrs)
    done: Dict[str, Any] = {"learning_rate": lrs, "initial_lr": new_lr}

    # Trainer.create_optimizer: [decay params (args.weight_decay), the
    # rest (0.0)].
    if len(groups) == 2 and "weight_decay" in groups[0] and groups[1].get("weight_decay") == 0.0:
        groups[0]["weight_decay"] = float(args.weight_decay)
        done["weight_decay"] = float(args.weight_decay)

    optim = str(getattr(args.optim, "value", args.optim))
    if optim.startswith("adam"):
        betas = (float(args.adam_beta1), float(args.adam_beta2))
        for g in groups:
            if "betas" in g:
                g["betas"] = betas
            if "eps" in g:
                g["eps"] = float(args.adam_epsilon)
        done["betas"] = betas
        done["eps"] = float(args.adam_epsilon)

    if hasattr(state, "compute_steps") and state.max_steps:
        state.compute_steps(args, state.max_steps)
        done["intervals"] = (state.logging_steps, state.eval_steps, state.save_steps)
    return done
