#!/usr/bin/env python3
"""The recipe's model in PyTorch, on the same threads, as the comparison for
stagebench's candle model (issue 4). Not run in CI: torch is a 5.4 GB install (with its CUDA libraries).

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch numpy
    /tmp/torchenv/bin/python scripts/bench-model-torch.py --threads 2 \
        --contexts 30253 --json out.json

Same architecture, sizes and optimiser as model/src/net.rs: Conv1d 5->16
(k1); three residual blocks h + relu(conv(h)), Conv1d 16->16 k5 'same'
padding, dilation 1, 2, 4; per-frame Linear 16->2; cross-entropy from
logits; Adam lr 1e-3, eps 1e-7; seed 0. Measured as the profile measures:

- resident: 2 warm-up steps, then 20 steps on one batch of 32; median step.
- epoch: a fresh model trained once over `--contexts` contexts in batches of
  32 (the last partial batch kept). The batches are made in memory before
  the clock starts, so torch's epoch has no loader at all: stagebench's
  end_to_end_fit_epoch includes its loader (reads, hash checks, shuffle,
  normalisation) and is still compared against this.
"""
import argparse, json, statistics, time

import torch
import torch.nn as nn

FRAMES, FEATURES, WIDTH, BATCH = 240, 5, 16, 32


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Conv1d(FEATURES, WIDTH, 1)
        self.blocks = nn.ModuleList(
            nn.Conv1d(WIDTH, WIDTH, 5, padding="same", dilation=d) for d in (1, 2, 4)
        )
        self.dense = nn.Conv1d(WIDTH, 2, 1)  # per-frame Dense 16->2

    def forward(self, x):  # x [B, 5, T]
        h = self.inp(x)
        for b in self.blocks:
            h = h + torch.relu(b(h))
        return self.dense(h)  # [B, 2, T]


def fresh():
    torch.manual_seed(0)
    m = Net()
    return m, torch.optim.Adam(m.parameters(), lr=1e-3, eps=1e-7)


def step(m, opt, loss_fn, x, y):
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(m(x), y)
    loss.backward()
    opt.step()
    return loss.item()  # synchronised, as train_on_batch returns its logs


def batch(g, n):
    x = torch.randn(n, FEATURES, FRAMES, generator=g)
    y = (torch.rand(n, FRAMES, generator=g) < 0.4).long()
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--contexts", type=int, default=30253)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(1)

    m, opt = fresh()
    params = sum(p.numel() for p in m.parameters())
    assert params == 4018, params
    x, y = batch(g, BATCH)
    for _ in range(2):
        step(m, opt, loss_fn, x, y)
    steps = []
    for _ in range(20):
        t = time.perf_counter()
        step(m, opt, loss_fn, x, y)
        steps.append(time.perf_counter() - t)

    sizes = [BATCH] * (a.contexts // BATCH) + ([a.contexts % BATCH] if a.contexts % BATCH else [])
    data = [batch(g, n) for n in sizes]
    m, opt = fresh()
    t = time.perf_counter()
    for x, y in data:
        step(m, opt, loss_fn, x, y)
    epoch = time.perf_counter() - t
    out = {
        "torch": torch.__version__,
        "threads": a.threads,
        "parameters": params,
        "resident_median_step_s": statistics.median(steps),
        "epoch_s": epoch,
        "batches": len(sizes),
        "contexts_per_s": a.contexts / epoch,
    }
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "x") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
