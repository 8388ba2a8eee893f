# expect: status=graded correctness=pass tier="1.25x faster than the starter" flagged=no note="every bottleneck removed (the speed tier, since the data path is what moves the step time on an H200: tests/labs/profiling_speed.json): data, labels and the batch order moved to the device once, batches gathered there, losses kept on the device, no print/sync in the loop"
import torch
import torch.nn.functional as F


def train(model, optimizer, data, steps):
    dev = data.device
    X = data.X.to(dev, non_blocking=True)
    Y = data.Y.to(dev, non_blocking=True)
    order = data.order.to(dev, non_blocking=True)
    losses = torch.empty(steps, device=dev)
    model.train()
    for step in range(steps):
        idx = order[step]
        x, y = X[idx], Y[idx]
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses[step] = loss.detach()
    return losses
