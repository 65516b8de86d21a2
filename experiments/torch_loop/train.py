"""A plain PyTorch loop as a tune trial (experiments/torch-loop.json): fit
sin(x) with a small MLP on the CPU. tune_trial (python/) gives it its
parameters, prints its metric lines, saves checkpoint-<step> folders where
tune looks and continues from the one tune hands back, and stops cleanly
when tune prunes it (SIGTERM)."""
import os

import torch
import tune_trial

p = tune_trial.params({"lr": 0.05, "hidden": 16, "steps": 60, "checkpoint_every": 10})
torch.manual_seed(0)
x = torch.linspace(-3, 3, 256).unsqueeze(1)
y = torch.sin(x)
model = torch.nn.Sequential(torch.nn.Linear(1, p["hidden"]), torch.nn.Tanh(), torch.nn.Linear(p["hidden"], 1))
opt = torch.optim.SGD(model.parameters(), lr=p["lr"], momentum=0.9)


def save(step):  # written under another name, then renamed: tune sees whole folders only
    tmp = tune_trial.checkpoint_dir(step) + ".tmp"
    os.makedirs(tmp, exist_ok=True)
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, os.path.join(tmp, "state.pt"))
    os.replace(tmp, tune_trial.checkpoint_dir(step))


start = 0
if tune_trial.resume_from():
    state = torch.load(os.path.join(tune_trial.resume_from(), "state.pt"))
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    for group in opt.param_groups:  # after a PBT exploit the new learning rate holds, not the donor's
        group["lr"] = p["lr"]
    start = state["step"]
    print(f"resumed from step {start}", flush=True)
for step in range(start + 1, p["steps"] + 1):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % p["checkpoint_every"] == 0:  # saved before its step is reported: tune resumes from it
        save(step)
    tune_trial.report(step, loss=loss.item())
    if tune_trial.should_stop():  # pruned, paused or stopped: leave within trial.stop_grace_s
        print(f"stopping at step {step}", flush=True)
        break
