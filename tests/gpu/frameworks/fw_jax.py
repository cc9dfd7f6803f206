#!/usr/bin/env python3
"""fw_jax.py - a small JAX training loop for gpuckpt's framework tests
(tests/gpu/frameworks.sh). It knows nothing of gpuckpt: it is checkpointed
transparently (gpuckpt-shepherd, CRIU and the driver) and must end as an
uninterrupted run does, bitwise.

An MLP (two hidden layers, jit-compiled forward, backward and SGD-with-momentum
update: XLA's cuBLAS GEMMs and its own fused kernels) on synthetic data made
from a fixed PRNG key. JAX's allocator keeps its device memory in a pool it
maps itself (cuMemCreate/cuMemMap): preallocated at start-up by default
(XLA_PYTHON_CLIENT_MEM_FRACTION of the GPU, 0.75 unless set), grown on demand
with XLA_PYTHON_CLIENT_PREALLOCATE=false. The test runs both.
Deterministic settings: XLA_FLAGS=--xla_gpu_deterministic_ops=true (set here
when XLA_FLAGS is unset), fixed PRNG keys.

Output (stdout, flushed per line):
  fw-jax: start: device=NAME steps=S preallocate=... fraction=...
  fw-jax: step K loss L (HEX)      every --report-every steps, and the last
  fw-jax: done: steps=S checksum=SHA256 of every parameter's bytes
"""
import argparse
import hashlib
import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_gpu_deterministic_ops=true")

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

NAME = "fw-jax"
SIZES = (256, 512, 512, 10)


def init(key):
    params = []
    for i, (m, n) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        key, k = jax.random.split(key)
        params.append((jax.random.normal(k, (m, n), jnp.float32) / np.sqrt(m),
                       jnp.zeros((n,), jnp.float32)))
    return params


def forward(params, x):
    for w, b in params[:-1]:
        x = jax.nn.gelu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss_fn(params, x, y):
    logits = forward(params, x)
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * jax.nn.one_hot(y, 10), axis=-1))


@jax.jit
def train_step(params, moms, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    moms = jax.tree_util.tree_map(lambda m, g: 0.9 * m + g, moms, grads)
    params = jax.tree_util.tree_map(lambda p, m: p - 0.01 * m, params, moms)
    return params, moms, loss


@jax.jit
def batch(key, step):
    k = jax.random.fold_in(key, step)
    x = jax.random.normal(k, (512, SIZES[0]), jnp.float32)
    y = jnp.clip(jnp.floor(x[:, :8].sum(axis=1) * 1.5) + 5, 0, 9).astype(jnp.int32)
    return x, y


def checksum(params):
    h = hashlib.sha256()
    for w, b in params:
        h.update(np.asarray(w).tobytes())
        h.update(np.asarray(b).tobytes())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--report-every", type=int, default=5)
    ap.add_argument("--delay-ms", type=int, default=80, help="sleep after each step")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    devs = [d for d in jax.devices() if d.platform == "gpu"]
    if not devs:
        print(f"{NAME}: no GPU device (jax.devices(): {jax.devices()})", file=sys.stderr)
        return 1
    print(f"{NAME}: start: device={devs[0].device_kind} steps={a.steps} jax={jax.__version__} "
          f"preallocate={os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE', 'default')} "
          f"fraction={os.environ.get('XLA_PYTHON_CLIENT_MEM_FRACTION', 'default')}", flush=True)

    key = jax.random.PRNGKey(a.seed)
    pkey, dkey = jax.random.split(key)
    params = init(pkey)
    moms = jax.tree_util.tree_map(jnp.zeros_like, params)
    for step in range(1, a.steps + 1):
        x, y = batch(dkey, step)
        params, moms, loss = train_step(params, moms, x, y)
        if step % a.report_every == 0 or step == a.steps:
            v = float(loss)
            print(f"{NAME}: step {step} loss {v:.9e} ({v.hex()})", flush=True)
        if a.delay_ms:
            time.sleep(a.delay_ms / 1000.0)
    jax.block_until_ready(params)
    print(f"{NAME}: done: steps={a.steps} checksum={checksum(params)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
