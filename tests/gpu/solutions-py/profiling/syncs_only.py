# expect: status=graded correctness=fail tier=any flagged=no note="half done the other way: the per-step syncs are gone (losses kept on the device, no .item(), .cpu(), print or synchronize) but the batch is still built row by row on the host and copied every step: results pass; copies fail, and so do syncs (each blocking copy from pageable memory waits for the GPU)"
import torch
import torch.nn.functional as F


def make_batch(data, step):
    idx = data.order[step].tolist()
    rows = [data.X[i] for i in idx]
    x = torch.stack(rows).to(data.device)
    y = data.Y[data.order[step]].to(data.device)
    return x, y


def train(model, optimizer, data, steps):
    losses = torch.empty(steps, device=data.device)
    model.train()
    for step in range(steps):
        x, y = make_batch(data, step)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses[step] = loss.detach()
    return losses
