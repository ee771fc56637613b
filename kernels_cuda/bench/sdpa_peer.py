#!/usr/bin/env python3
"""PyTorch peer for rfa_cuda_kernel_bench: times scaled_dot_product_attention with the flash
backend on the benchmark's shapes and prints one "key milliseconds" line per measurement
(fwd_full, fwd_causal, bwd_full, bwd_causal). Median of --iters runs after --warmup, CUDA events.
The backward time is that of autograd's backward alone (what rfa_cuda's backward replaces)."""
import argparse
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def median_ms(fn, warmup, iters):
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


def main():
    ap = argparse.ArgumentParser()
    for name, default in [("batch", 2), ("heads", 16), ("kv-heads", 16), ("seq", 8192), ("dim", 128),
                          ("warmup", 5), ("iters", 30)]:
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    a = ap.parse_args()
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float16
    # Same memory layout as rfa_cuda (b, s, h, d), viewed as (b, h, s, d) for SDPA.
    q = torch.randn(a.batch, a.seq, a.heads, a.dim, device="cuda", dtype=dtype).transpose(1, 2)
    k = torch.randn(a.batch, a.seq, a.kv_heads, a.dim, device="cuda", dtype=dtype).transpose(1, 2)
    v = torch.randn(a.batch, a.seq, a.kv_heads, a.dim, device="cuda", dtype=dtype).transpose(1, 2)
    # enable_gqa exists from PyTorch 2.5 on; pass it only when the shapes need it.
    extra = {"enable_gqa": True} if a.heads != a.kv_heads else {}
    for t in (q, k, v):
        t.requires_grad_(True)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        for causal in (False, True):
            tag = "causal" if causal else "full"

            def forward():
                with torch.no_grad():
                    F.scaled_dot_product_attention(q, k, v, is_causal=causal, **extra)

            print(f"fwd_{tag} {median_ms(forward, a.warmup, a.iters):.6f}", flush=True)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, **extra)
            grad = torch.randn_like(out)

            def backward():
                torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)

            print(f"bwd_{tag} {median_ms(backward, a.warmup, a.iters):.6f}", flush=True)


if __name__ == "__main__":
    main()
