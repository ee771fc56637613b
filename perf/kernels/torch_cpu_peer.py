#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch's CPU flash-attention kernel (one thread unless --threads), as the peer of rfa's
kernel benchmark.

Prints one JSON object per configuration: {"dtype", "causal", "fwd_ms", "bwd_ms", "torch", "layout",
"padded_to"} (padded_to: the head dim q, k and v were zero-padded to where --value-head-dim
differs from --head-dim, else 0).
Exits 3 when torch cannot be imported (the benchmark then reports no peer).

--serve keeps it running for paired measurements (rfa_kernel_bench --rfa_paired): it prints
"ready torch=<version>", then answers each request line "<fwd|bwd> <float32|bfloat16>
<full|causal>" with the milliseconds of one call (a backward: the backward alone, after an
untimed forward, into fresh gradients), or "error <why>"; it exits at end of input.

--layout picks the memory the peer reads: "bhsd" (default), contiguous [B][H][S][d] tensors, the
layout PyTorch's kernel prefers; "bshd", views (transpose(1, 2)) of contiguous [B][S][H][d]
tensors, the memory rfa's kernels read, as a caller holding rfa's layout would pass it.
"""
import argparse
import json
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(3)


def median_ms(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def one_call_ms(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


DTYPE_NAMES = ("float32", "bfloat16")
MASK_NAMES = ("full", "causal")


def serve(torch, F, backend, shape, layout, requests, reply):
    """Answers timing requests (see the module's text) from the lines of `requests`; `reply`
    prints one line. Inputs are made once per (dtype, mask) and reused, as rfa's are."""
    inputs = {}
    scale = scale_argument(shape)
    reply(f"ready torch={torch.__version__}")
    for line in requests:
        words = line.split()
        if len(words) != 3 or words[0] not in ("fwd", "bwd") or words[1] not in DTYPE_NAMES or words[2] not in MASK_NAMES:
            reply(f"error expected '<fwd|bwd> <{'|'.join(DTYPE_NAMES)}> <{'|'.join(MASK_NAMES)}>', got {line.strip()!r}")
            continue
        pass_, dtype_name, mask = words
        key = (dtype_name, mask)
        if key not in inputs:
            inputs[key] = make_inputs(torch, shape, getattr(torch, dtype_name), layout)
        q, k, v, dout = inputs[key]
        causal = mask == "causal"
        with backend():
            if pass_ == "fwd":
                ms = one_call_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, **scale))
            else:
                out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, **scale)
                q.grad = k.grad = v.grad = None  # written, not accumulated into, as rfa's are
                ms = one_call_ms(lambda: out.backward(dout))
        reply(f"{ms:.6f}")


def scale_argument(shape):
    """The keyword arguments that set SDPA's scale: 1/sqrt(d) where q and k are padded beyond d
    (their default would be 1/sqrt of the padded width; the keyword needs torch 2.1), none
    otherwise. shape is (B, H, S, d, dv)."""
    d, dv = shape[3], shape[4]
    return {"scale": d ** -0.5} if dv > d else {}


def make_inputs(torch, shape, dtype, layout):
    """q, k, v (requiring gradients) and dout of the logical shape (B, H, S, w) in `layout`;
    shape is (B, H, S, d, dv) and w = max(d, dv). Where d and dv differ (MLA's 192 / 128), the
    narrower ones are zero-padded to w, the usual way to run such heads on a flash kernel that
    takes one head dim (PyTorch's CPU one does): zeros add nothing to Q K^T, and a V padded with
    zeros gives an output whose padding is zero (q and k padded beyond d need the scale
    1/sqrt(d) passed: scale_argument())."""
    b, h, s, d, dv = shape
    w = max(d, dv)

    def tensor(width, grad):
        if layout == "bhsd":
            t = torch.randn((b, h, s, w), dtype=dtype)
        else:
            t = torch.randn((b, s, h, w), dtype=dtype).transpose(1, 2)
        if width < w:
            t[..., width:] = 0
        return t.requires_grad_() if grad else t

    return tensor(d, True), tensor(d, True), tensor(dv, True), tensor(dv, False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--value-head-dim", type=int, default=0, help="v's head dim where it differs (0: --head-dim)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--layout", choices=("bhsd", "bshd"), default="bhsd")
    ap.add_argument("--serve", action="store_true", help="answer timing requests on stdin (see above)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def backend():  # a fresh context each time: these managers are single-use
            return sdpa_kernel(SDPBackend.FLASH_ATTENTION)
    except ImportError:  # older torch: let it choose
        import contextlib
        backend = contextlib.nullcontext
    shape = (args.batch, args.heads, args.seq, args.head_dim, args.value_head_dim or args.head_dim)
    if args.serve:
        serve(torch, F, backend, shape, args.layout, sys.stdin,
              lambda line: print(line, flush=True))
        return
    scale = scale_argument(shape)
    padded = max(shape[3], shape[4]) if shape[3] != shape[4] else 0
    for dtype_name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        for causal in (False, True):
            q, k, v, dout = make_inputs(torch, shape, dtype, args.layout)
            with backend():
                fwd = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, **scale), args.repeats)

                def fwd_bwd():
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, **scale)
                    out.backward(dout)

                both = median_ms(fwd_bwd, args.repeats)
            print(json.dumps({"dtype": dtype_name, "causal": causal, "fwd_ms": fwd, "bwd_ms": max(both - fwd, 0.0),
                              "torch": torch.__version__, "layout": args.layout, "padded_to": padded}), flush=True)


if __name__ == "__main__":
    main()
