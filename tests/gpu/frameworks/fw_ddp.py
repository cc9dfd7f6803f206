#!/usr/bin/env python3
"""fw_ddp.py - one rank of a small PyTorch DistributedDataParallel training
job over NCCL, for gpuckpt's multi-GPU tests (issue 27; tests/gpu/nccl-gpu.sh).
It knows nothing of gpuckpt: each rank is a process of its own, started the
way srun starts one task per GPU, and the job is checkpointed transparently
(gpuckpt-shepherd, CRIU and the driver, with NCCL's communicators taken down
and made again by the runtime); it must then go on with the losses of an
uninterrupted run.

The rank and the rendezvous come from the environment, as torchrun or a
Slurm job script sets them: RANK (or SLURM_PROCID), WORLD_SIZE (or
SLURM_NTASKS), MASTER_ADDR, MASTER_PORT; LOCAL_RANK picks the GPU when the
process sees several (default: the first it sees).

Deterministic: fixed seeds, torch.use_deterministic_algorithms(True), each
rank's batches made from a seed per (rank, step).

Output (stdout, flushed per line), the same on every rank:
  fw-ddp: start: rank R of W device=NAME (UUID)
  fw-ddp: step K loss HEX     the mean loss over the ranks (all-reduced), as
                              the bits of a float32
  fw-ddp: done: steps=S checksum=SHA256 of every parameter's bytes
"""
import argparse
import hashlib
import os
import struct
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

NAME = "fw-ddp"


def env_int(*names, default=None):
    for n in names:
        if os.environ.get(n):
            return int(os.environ[n])
    if default is None:
        sys.exit(f"{NAME}: none of {', '.join(names)} is set")
    return default


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--sleep", type=float, default=0.1, help="seconds after each step")
    ap.add_argument("--width", type=int, default=2048)
    args = ap.parse_args()

    rank = env_int("RANK", "SLURM_PROCID")
    world = env_int("WORLD_SIZE", "SLURM_NTASKS")
    local = env_int("LOCAL_RANK", default=0) % max(torch.cuda.device_count(), 1)
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    torch.manual_seed(1234)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    props = torch.cuda.get_device_properties(dev)
    print(f"{NAME}: start: rank {rank} of {world} device={props.name} ({props.uuid})",
          flush=True)

    w = args.width
    model = nn.Sequential(nn.Linear(256, w), nn.GELU(), nn.Linear(w, w), nn.GELU(),
                          nn.Linear(w, w), nn.GELU(), nn.Linear(w, 10)).to(dev)
    ddp = DDP(model, device_ids=[local], bucket_cap_mb=8)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(1, args.steps + 1):
        g = torch.Generator(device="cpu").manual_seed(rank * 1000003 + step)
        x = torch.randn(512, 256, generator=g).to(dev)
        y = (x[:, :10].argmax(dim=1)).to(dev)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.SUM)
        bits = struct.unpack("<I", struct.pack("<f", (mean / world).item()))[0]
        print(f"{NAME}: step {step} loss {bits:08x}", flush=True)
        time.sleep(args.sleep)
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().numpy().tobytes())
    print(f"{NAME}: done: steps={args.steps} checksum={h.hexdigest()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
