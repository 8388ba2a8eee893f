# expect: status=graded correctness=fail tier=none flagged=yes note="fast but wrong: trains on contiguous slices instead of data.order's batches, so its losses and weights differ from the starter's; no speed points"
import torch
import torch.nn.functional as F


def train(model, optimizer, data, steps):
    dev = data.device
    X, Y = data.X.to(dev), data.Y.to(dev)
    b = data.order.shape[1]
    losses = torch.empty(steps, device=dev)
    for step in range(steps):
        lo = (step * b) % (X.shape[0] - b)
        loss = F.cross_entropy(model(X[lo:lo + b]), Y[lo:lo + b])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses[step] = loss.detach()
    return losses
