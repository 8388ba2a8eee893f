# expect: status=graded correctness=fail tier="1.25x faster than the starter" flagged=no note="half done: the data path is fixed (batches gathered on the device) but loss.item() still syncs every step: results and copies pass, syncs fail"
import torch
import torch.nn.functional as F


def train(model, optimizer, data, steps):
    dev = data.device
    X, Y, order = data.X.to(dev), data.Y.to(dev), data.order.to(dev)
    losses = []
    for step in range(steps):
        idx = order[step]
        loss = F.cross_entropy(model(X[idx]), Y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
