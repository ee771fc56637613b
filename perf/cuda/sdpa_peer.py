#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch peers for rfa_cuda_kernel_bench: times torch.nn.functional.scaled_dot_product_attention
with each requested backend (FlashAttention-2 "flash", NVIDIA "cudnn") on the benchmark's shape
and prints one line per measurement:

    <peer> <pass>_<mask> <milliseconds>        e.g.  flash fwd_causal 1.234
    <peer> <pass>_<mask> error <reason>         when that backend cannot run this shape

so the benchmark can always say why a peer is missing; and first the device's measured peak,
the rate of a large matrix product in the benchmark's dtype through PyTorch (the ceiling the
benchmark reports its fraction of):

    peak matmul_<dtype> <TFLOP/s>               or  peak matmul_<dtype> error <reason>

Median of --iters runs after --warmup,
CUDA events. The forward is timed as training runs it, keeping what the backward needs (the
log-sum-exp rfa_cuda's forward always writes; under no_grad PyTorch's cuDNN backend skips it).
The backward time is that of autograd's backward alone (what rfa_cuda's backward replaces)."""
import argparse
import statistics
import sys

PEERS = ("flash", "cudnn")


def median_ms(torch, fn, warmup, iters):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def one_line(exc):
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


def measure_peak(torch, dtype, a):
    """An n x n x n matrix product (n = --peak-size) on random data (zeros run faster than real
    data on these devices), its median rate in TFLOP/s."""
    n = a.peak_size
    try:
        x = torch.randn(n, n, device="cuda", dtype=dtype)
        y = torch.randn(n, n, device="cuda", dtype=dtype)
        ms = median_ms(torch, lambda: torch.matmul(x, y), a.warmup, max(a.iters, 10))
        print(f"peak matmul_{a.dtype} {2.0 * n**3 / (ms * 1e-3) * 1e-12:.3f}", flush=True)
    except Exception as exc:
        print(f"peak matmul_{a.dtype} error {one_line(exc)}", flush=True)


def measure_peer(torch, name, backend, tensors, extra, a):
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel

    q, k, v = tensors
    for causal in (False, True):
        tag = "causal" if causal else "full"
        for pass_name in ("fwd", "bwd"):
            key = f"{pass_name}_{tag}"
            try:
                # A fresh context per measurement: the backend choice must hold for this call.
                with sdpa_kernel(backend):
                    if pass_name == "fwd":
                        def run():
                            F.scaled_dot_product_attention(q, k, v, is_causal=causal, **extra)
                    else:
                        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, **extra)
                        grad = torch.randn_like(out)

                        def run():
                            torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)
                    ms = median_ms(torch, run, a.warmup, a.iters)
                print(f"{name} {key} {ms:.6f}", flush=True)
            except Exception as exc:  # report, then try the next measurement
                print(f"{name} {key} error {one_line(exc)}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in [("batch", 2), ("heads", 16), ("kv-heads", 16), ("seq", 8192), ("dim", 128),
                          ("value-dim", 0), ("warmup", 5), ("iters", 30), ("peak-size", 8192)]:
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ",".join(PEERS))
    a = ap.parse_args()
    peers = [p for p in a.peers.split(",") if p]
    try:
        import torch
        from torch.nn.attention import SDPBackend
    except Exception as exc:
        for p in peers:
            print(f"{p} all error PyTorch not importable by {sys.executable}: {one_line(exc)}", flush=True)
        return 0
    if not torch.cuda.is_available():
        for p in peers:
            print(f"{p} all error torch {torch.__version__} sees no CUDA device", flush=True)
        return 0
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": getattr(SDPBackend, "CUDNN_ATTENTION", None)}
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float16
    # Same memory layout as rfa_cuda (b, s, h, d), viewed as (b, h, s, d) for SDPA.
    q = torch.randn(a.batch, a.seq, a.heads, a.dim, device="cuda", dtype=dtype).transpose(1, 2)
    k = torch.randn(a.batch, a.seq, a.kv_heads, a.dim, device="cuda", dtype=dtype).transpose(1, 2)
    # V's head dim: --value-dim where it differs from --dim (MLA's 192 / 128), else --dim.
    value_dim = a.value_dim or a.dim
    v = torch.randn(a.batch, a.seq, a.kv_heads, value_dim, device="cuda", dtype=dtype).transpose(1, 2)
    for t in (q, k, v):
        t.requires_grad_(True)
    # enable_gqa exists from PyTorch 2.5 on; pass it only when the shapes need it.
    extra = {"enable_gqa": True} if a.heads != a.kv_heads else {}
    try:
        cudnn_version = torch.backends.cudnn.version()
    except Exception as exc:  # a cuDNN that torch cannot load: the flash peer still runs
        cudnn_version = f"not loadable ({one_line(exc)})"
    print(f"torch {torch.__version__} cuda {torch.version.cuda} cudnn {cudnn_version}", flush=True)
    measure_peak(torch, dtype, a)
    for p in peers:
        if p not in backends:
            print(f"{p} all error unknown peer (known: {', '.join(PEERS)})", flush=True)
        elif backends[p] is None:
            print(f"{p} all error torch {torch.__version__} has no such SDPA backend", flush=True)
        else:
            measure_peer(torch, p, backends[p], (q, k, v), extra, a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
