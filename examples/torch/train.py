#!/usr/bin/env python3
"""A small PyTorch training script with no stagebench in it: a 1-D
convolutional network over synthetic sequences, a DataLoader with
num_workers=2 whose dataset does real per-item work, SGD with momentum.

  coordinator --mode trials --trials 3 --command 'python3 examples/torch/train.py' --span preset:torch

times each DataLoader wait (`loader_wait`), each optimizer step
(`optimizer_step`), each backward pass (`backward`) and the time between
batches (`step`), and grades the input-wait fraction as the TensorFlow
profiler does. `--batches N` (default 40), `--work N` (per-item work in the
loader, default 2000) and `--width N` (the network's channels, default 32)
set the sizes: a larger --work makes it more input-bound, a larger --width
less. `--epochs N` (default 1) passes over the data; `--truth FILE` makes the
script time itself (each wait for a batch, each optimizer step, each
epoch's last `next()` that waits for the loader's workers to stop) and
write it as JSON, for tests.
"""
import argparse
import json
import math
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Sequences(Dataset):
    """Synthetic sequences made on demand: each item costs `work` sine
    evaluations in the loader's worker processes."""

    def __init__(self, n, work):
        self.n, self.work = n, work

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(5, 240, generator=g)
        acc = 0.0
        for k in range(self.work):
            acc += math.sin(i * 0.001 + k)
        y = (x.mean() + acc * 1e-6 > 0).long()
        return x, y


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=int, default=40)
    p.add_argument("--work", type=int, default=2000)
    p.add_argument("--width", type=int, default=32)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--truth")
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = Sequences(32 * a.batches, a.work)
    loader = DataLoader(data, batch_size=32, shuffle=True, num_workers=a.num_workers)
    w = a.width
    model = nn.Sequential(
        nn.Conv1d(5, w, 5, padding=2), nn.ReLU(),
        nn.Conv1d(w, w, 5, padding=2), nn.ReLU(),
        nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(w, 2),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    batches = 0
    clock = {"wait": [], "optimizer_step": [], "stop": []}
    for _ in range(a.epochs):
        it = iter(loader)
        while True:
            began = time.perf_counter()
            try:
                x, y = next(it)
            except StopIteration:
                clock["stop"].append(time.perf_counter() - began)
                break
            clock["wait"].append(time.perf_counter() - began)
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            began = time.perf_counter()
            opt.step()
            clock["optimizer_step"].append(time.perf_counter() - began)
            batches += 1
    print("trained %d batches, last loss %.4f" % (batches, loss.item()))
    if a.truth:
        with open(a.truth, "w") as f:
            json.dump(clock, f)


if __name__ == "__main__":
    main()
