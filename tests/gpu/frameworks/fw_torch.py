#!/usr/bin/env python3
"""fw_torch.py - a small PyTorch training loop for gpuckpt's framework tests
(tests/gpu/frameworks.sh, tests/slurm/e2e-frameworks.sh). It knows nothing of
gpuckpt: it is checkpointed transparently (gpuckpt-shepherd, CRIU and the
driver) and must end as an uninterrupted run does, bitwise.

What it brings to a checkpoint:
  - cuDNN: two Conv2d layers, run eagerly;
  - cuBLAS: two Linear layers (CUBLAS_WORKSPACE_CONFIG=:4096:8);
  - Triton: a LayerNorm/GELU/sigmoid mix compiled by torch.compile (Inductor
    generates Triton kernels for it, forward and backward);
  - a DataLoader with --workers worker processes (forked children of this
    process, re-created every epoch), on synthetic data that each worker
    makes from a fixed seed per sample;
  - AdamW.
Deterministic settings: torch.manual_seed, torch.use_deterministic_algorithms
(True), cudnn.benchmark False, cudnn.deterministic True, CUBLAS_WORKSPACE_CONFIG
=:4096:8 (set here when the environment has none), a seeded shuffle.

Output (stdout, flushed per line):
  fw-torch: start: device=NAME (UUID) steps=S workers=W
  fw-torch: step K loss L (HEX)      every --report-every steps, and the last
  fw-torch: done: steps=S checksum=SHA256 of every parameter's bytes
"""
import argparse
import hashlib
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import numpy  # noqa: E402,F401  (Tensor.numpy() needs it: fail here, at the start)
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

NAME = "fw-torch"


class Synthetic(Dataset):
    """Images and labels made from a seed per sample: the same in any worker."""

    def __init__(self, n, seed):
        self.n = n
        self.seed = seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 1000003 + i)
        x = torch.randn(3, 32, 32, generator=g)
        # A label the image tells, so that the loss goes down.
        y = int((x[0].mean() * 40).clamp(-4.99, 4.99).floor().item()) + 5
        return x, y


def mix(x, w, b):
    return F.gelu(F.layer_norm(x, (x.shape[-1],), w, b)) * torch.sigmoid(x)


class Net(nn.Module):
    def __init__(self, mixer):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, stride=2)
        self.fc1 = nn.Linear(32 * 16 * 16, 256)
        self.norm = nn.LayerNorm(256)
        self.fc2 = nn.Linear(256, 10)
        self.mixer = mixer

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = self.fc1(x.flatten(1))
        x = self.mixer(x, self.norm.weight, self.norm.bias)
        return self.fc2(x)


def checksum(model):
    h = hashlib.sha256()
    for name, p in sorted(model.named_parameters()):
        h.update(name.encode())
        h.update(p.detach().to("cpu").contiguous().numpy().tobytes())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--report-every", type=int, default=5)
    ap.add_argument("--delay-ms", type=int, default=80, help="sleep after each step")
    ap.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--no-compile", action="store_true", help="no torch.compile (no Triton)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print(f"{NAME}: no CUDA device", file=sys.stderr)
        return 1

    torch.manual_seed(a.seed)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True

    dev = torch.device("cuda", 0)
    prop = torch.cuda.get_device_properties(dev)
    uuid = getattr(prop, "uuid", "?")
    print(f"{NAME}: start: device={prop.name} (GPU-{uuid}) steps={a.steps} workers={a.workers} "
          f"torch={torch.__version__} cudnn={torch.backends.cudnn.version()}", flush=True)

    mixer = mix if a.no_compile else torch.compile(mix)
    model = Net(mixer).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = Synthetic(a.batch * 16, a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    loader = DataLoader(data, batch_size=a.batch, shuffle=True, drop_last=True,
                        num_workers=a.workers, generator=gen)

    step = 0
    while step < a.steps:
        for x, y in loader:
            x = x.to(dev)
            y = y.to(dev)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            if step % a.report_every == 0 or step == a.steps:
                v = loss.item()
                print(f"{NAME}: step {step} loss {v:.9e} ({v.hex()})", flush=True)
            if a.delay_ms:
                time.sleep(a.delay_ms / 1000.0)
            if step == a.steps:
                break
    torch.cuda.synchronize()
    print(f"{NAME}: done: steps={step} checksum={checksum(model)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
