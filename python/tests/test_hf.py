"""Unit tests of tune_trial.hf.TuneCallback on transformers' own classes
(TrainingArguments, TrainerState, TrainerControl, the optimizer and LR
schedule Trainer builds). Skipped where transformers is not installed; the
test suite runs them with the Python of scripts/hf-venv.sh
(tests/e2e/CMakeLists.txt, e2e.hf_callback_unittest)."""

import contextlib
import io
import os
import signal
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

try:
    import torch
    import transformers
    from transformers import TrainerControl, TrainerState, TrainingArguments
    from transformers.optimization import get_linear_schedule_with_warmup
except ImportError:  # the package's own tests run without it
    transformers = None

import tune_trial

if transformers is not None:
    from tune_trial.hf import TuneCallback


def _args(tmp, **kw):
    base = dict(output_dir=tmp, report_to="none", use_cpu=True, max_steps=60, logging_steps=5,
                eval_strategy="steps", eval_steps=10, save_strategy="steps", save_steps=10)
    base.update(kw)
    return TrainingArguments(**base)


def _optimizer_and_schedule(args, decay, plain):
    # What Trainer.create_optimizer and create_scheduler build: the decay
    # group first, then the rest at 0.0; AdamW; linear with warmup.
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": plain, "weight_decay": 0.0}],
        lr=args.learning_rate, betas=(args.adam_beta1, args.adam_beta2), eps=args.adam_epsilon)
    sched = get_linear_schedule_with_warmup(opt, args.warmup_steps, args.max_steps)
    return opt, sched


def _lines(fn):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn()
    return out.getvalue().splitlines()


@unittest.skipIf(transformers is None, "transformers is not installed")
class TuneCallbackTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_new_hyperparameters_replace_the_restored_ones(self):
        torch.manual_seed(0)
        w, b = torch.nn.Parameter(torch.randn(4, 4)), torch.nn.Parameter(torch.zeros(4))
        old = _args(self.tmp.name, learning_rate=2e-3, warmup_steps=5, weight_decay=0.1,
                    adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8)
        opt, sched = _optimizer_and_schedule(old, [w], [b])
        for _ in range(30):  # 30 steps of the donor
            (w.sum() + b.sum()).backward()
            opt.step()
            sched.step()
            opt.zero_grad()
        saved_opt, saved_sched = opt.state_dict(), sched.state_dict()

        # The recipient: new arguments, a fresh optimizer and schedule, then
        # Trainer's _load_optimizer_and_scheduler.
        new = _args(self.tmp.name, learning_rate=1e-2, warmup_steps=2, weight_decay=0.3,
                    adam_beta1=0.8, adam_beta2=0.99, adam_epsilon=1e-6, eval_steps=20, save_steps=20)
        opt2, sched2 = _optimizer_and_schedule(new, [w], [b])
        opt2.load_state_dict(saved_opt)
        sched2.load_state_dict(saved_sched)
        self.assertAlmostEqual(opt2.param_groups[0]["lr"], 2e-3 * 30 / 55)  # the donor's, restored

        state = TrainerState(global_step=30, max_steps=60, logging_steps=5, eval_steps=10, save_steps=10)
        cb = TuneCallback()
        cb.on_train_begin(new, state, TrainerControl(), optimizer=opt2, lr_scheduler=sched2)

        want = 1e-2 * (60 - 30) / (60 - 2)
        for g in opt2.param_groups:
            self.assertAlmostEqual(g["lr"], want, places=15)
            self.assertEqual(g["initial_lr"], 1e-2)
            self.assertEqual(g["betas"], (0.8, 0.99))
            self.assertEqual(g["eps"], 1e-6)
        self.assertEqual(opt2.param_groups[0]["weight_decay"], 0.3)
        self.assertEqual(opt2.param_groups[1]["weight_decay"], 0.0)
        self.assertEqual(sched2.base_lrs, [1e-2, 1e-2])
        self.assertAlmostEqual(sched2.get_last_lr()[0], want, places=15)
        self.assertEqual((state.logging_steps, state.eval_steps, state.save_steps), (5, 20, 20))
        # The schedule goes on from there with the new base and shape.
        (w.sum() + b.sum()).backward()
        opt2.step()
        sched2.step()
        self.assertAlmostEqual(opt2.param_groups[0]["lr"], 1e-2 * (60 - 31) / (60 - 2), places=15)
        # Adam's moments are the donor's.
        self.assertEqual(int(opt2.state[w]["step"]), 31)

    def test_nothing_changes_without_a_restored_checkpoint_or_when_disabled(self):
        w = torch.nn.Parameter(torch.zeros(2))
        args = _args(self.tmp.name, learning_rate=1e-3, warmup_steps=0)
        for cb, step in ((TuneCallback(), 0), (TuneCallback(apply_new_hyperparameters=False), 30)):
            opt, sched = _optimizer_and_schedule(args, [w], [])
            opt.param_groups[0]["lr"] = 5.0
            cb.on_train_begin(args, TrainerState(global_step=step, max_steps=60), TrainerControl(),
                              optimizer=opt, lr_scheduler=sched)
            self.assertEqual(opt.param_groups[0]["lr"], 5.0)
            self.assertEqual(cb.overridden, {})

    def test_a_step_that_saves_reports_after_the_save(self):
        args = _args(self.tmp.name)
        cb = TuneCallback()
        state = TrainerState(global_step=10, max_steps=60)
        control = TrainerControl(should_save=True)
        early = _lines(lambda: (cb.on_log(args, state, control, logs={"loss": 2.5, "learning_rate": 1e-3}),
                                cb.on_evaluate(args, state, control, metrics={"eval_loss": 2.25, "epoch": 0.5})))
        self.assertEqual(early, [])
        self.assertEqual(_lines(lambda: cb.on_save(args, state, control)),
                         ["step=10 loss=2.5 learning_rate=0.001", "step=10 eval_loss=2.25 epoch=0.5"])
        # A step without a save reports at once; the eval logs that Trainer
        # passes through on_log are left to on_evaluate.
        state.global_step = 15
        control = TrainerControl()
        self.assertEqual(
            _lines(lambda: (cb.on_log(args, state, control, logs={"eval_loss": 2.0, "epoch": 0.6}),
                            cb.on_evaluate(args, state, control,
                                           metrics={"eval_loss": 2.0, "eval_runtime": 0.1, "note": "x"}))),
            ["step=15 eval_loss=2.0 eval_runtime=0.1"])
        # What is left when training ends is printed then.
        state.global_step = 20
        control = TrainerControl(should_save=True)
        self.assertEqual(_lines(lambda: cb.on_evaluate(args, state, control, metrics={"eval_loss": 1.5})), [])
        self.assertEqual(_lines(lambda: cb.on_train_end(args, state, control)), ["step=20 eval_loss=1.5"])

    def test_sigterm_stops_training_without_eval_or_save(self):
        args = _args(self.tmp.name)
        cb = TuneCallback()
        previous = signal.getsignal(signal.SIGTERM)
        self.addCleanup(signal.signal, signal.SIGTERM, previous)
        cb.on_init_end(args, TrainerState(), TrainerControl())
        control = TrainerControl(should_evaluate=True, should_save=True, should_log=True)
        cb.on_step_end(args, TrainerState(global_step=3), control)
        self.assertFalse(control.should_training_stop)
        os.kill(os.getpid(), signal.SIGTERM)  # only sets the flag
        self.assertTrue(tune_trial.should_stop())
        cb.on_step_end(args, TrainerState(global_step=4), control)
        self.assertTrue(control.should_training_stop)
        self.assertFalse(control.should_evaluate or control.should_save or control.should_log)
        tune_trial._stop.clear()


if __name__ == "__main__":
    unittest.main()
