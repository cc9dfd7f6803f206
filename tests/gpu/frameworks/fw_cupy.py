#!/usr/bin/env python3
"""fw_cupy.py - a loop of CuPy array operations for gpuckpt's framework tests
(tests/gpu/frameworks.sh). It knows nothing of gpuckpt: it is checkpointed
transparently (gpuckpt-shepherd, CRIU and the driver) and must end as an
uninterrupted run does, bitwise.

Each step: a matrix product (cuBLAS), a custom ElementwiseKernel and a
ReductionKernel (compiled by NVRTC at first use, cached in CUPY_CACHE_DIR),
element-wise arithmetic and a sum (CUB), on arrays made from a fixed seed; the
memory comes from CuPy's own pool. Deterministic settings: a fixed seed,
CUBLAS_WORKSPACE_CONFIG=:4096:8 (set here when the environment has none).

Output (stdout, flushed per line):
  fw-cupy: start: device=NAME steps=S
  fw-cupy: step K sum S (HEX)        every --report-every steps, and the last
  fw-cupy: done: steps=S checksum=SHA256 of the final arrays' bytes
"""
import argparse
import hashlib
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import cupy as cp  # noqa: E402

NAME = "fw-cupy"

relax = cp.ElementwiseKernel(
    "float32 a, float32 b, float32 t", "float32 c",
    "c = a + t * (tanhf(b) - 0.5f * a)", "gk_relax")
sqnorm = cp.ReductionKernel(
    "float32 x", "float32 y", "x * x", "a + b", "y = sqrt(a)", "0", "gk_sqnorm")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--report-every", type=int, default=5)
    ap.add_argument("--delay-ms", type=int, default=80, help="sleep after each step")
    ap.add_argument("--size", type=int, default=1024, help="matrix side")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    dev = cp.cuda.Device(0)
    name = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
    print(f"{NAME}: start: device={name} steps={a.steps} cupy={cp.__version__}", flush=True)

    rs = cp.random.RandomState(a.seed)
    m = rs.standard_normal((a.size, a.size), dtype=cp.float32) / cp.float32(a.size ** 0.5)
    v = rs.standard_normal((a.size, 64), dtype=cp.float32)
    acc = cp.zeros((a.size, 64), dtype=cp.float32)
    for step in range(1, a.steps + 1):
        w = m @ v
        v = relax(v, w, cp.float32(0.1))
        v = v / sqnorm(v, axis=0)
        acc += v * cp.float32(1.0 / step)
        if step % a.report_every == 0 or step == a.steps:
            s = float(acc.sum())
            print(f"{NAME}: step {step} sum {s:.9e} ({s.hex()})", flush=True)
        if a.delay_ms:
            time.sleep(a.delay_ms / 1000.0)
    cp.cuda.Device().synchronize()
    h = hashlib.sha256()
    for arr in (v, acc, m):
        h.update(cp.asnumpy(arr).tobytes())
    print(f"{NAME}: done: steps={a.steps} checksum={h.hexdigest()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
