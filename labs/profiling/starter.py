"""Lab 1.3.5 -- the profiling workshop: starter.

This training loop is correct and slow. Profile it (README.md says how),
find where each step's time goes, and submit a faster train() that computes
the same thing: the same batches in the same order, the same model, the same
optimizer, so the same losses and the same final weights.

The grader calls train(model, optimizer, data, steps) with:
  model      a torch.nn.Module already on data.device (an MLP: 256 -> 512 ->
             512 -> 10, ReLU); its initial weights come from the grader
  optimizer  torch.optim.SGD over model.parameters() (lr 0.05, momentum 0.9)
  data       data.X      float32 CPU tensor (rows, 256): the inputs
             data.Y      int64 CPU tensor (rows,): the class of each row
             data.order  int64 CPU tensor (steps, 256): step s trains on the
                         rows data.order[s], in that order
             data.device torch.device("cuda") (torch.device("cpu") in CI)
  steps      how many optimizer steps to take
and expects the loss of every step back (a list of numbers or a 1-D tensor,
on any device). It times your whole call and divides by steps.
"""
import torch
import torch.nn.functional as F


def make_batch(data, step):
    # Builds the batch in Python, one row at a time, on the CPU.
    idx = data.order[step].tolist()
    rows = [data.X[i] for i in idx]
    x = torch.stack(rows).to(data.device)
    y = data.Y[data.order[step]].to(data.device)
    return x, y


def train(model, optimizer, data, steps):
    losses = []
    model.train()
    for step in range(steps):
        x, y = make_batch(data, step)
        out = model(x)
        loss = F.cross_entropy(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        acc = (out.argmax(dim=1) == y).float().mean().cpu()
        if step % 10 == 0:
            print("step", step, "loss", loss, "accuracy", acc)
        if data.device.type == "cuda":
            torch.cuda.synchronize()
    return losses
