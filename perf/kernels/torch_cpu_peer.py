#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch on the CPU (one thread unless --threads), as the peer of rfa's kernel benchmark, on
the same problem: its shape and the variant it computes (grouped-query heads, a sliding window,
packed documents, soft-capped scores).

What PyTorch runs for each pass is the fastest path it has for that variant:
- plain attention (causal or not, grouped heads or not): SDPA's CPU flash kernel, both passes
  (enable_gqa for grouped heads);
- a window or documents: forward, FlexAttention compiled with a block mask (it skips the tiles
  the mask hides; SDPA with a boolean mask computes every score); backward, SDPA's flash kernel
  with a boolean mask (FlexAttention has no CPU backward);
- a soft cap: forward, FlexAttention compiled with a score_mod (SDPA has no soft cap); backward,
  eager math (Q K^T, tanh, masked softmax, P V, through autograd), as Hugging Face's eager
  attention computes Gemma 2's capped scores.
Where FlexAttention cannot run (an older torch, no compiler), the forward falls back to what the
backward uses, and the name it reports says so.

Prints one JSON object per configuration: {"dtype", "causal", "fwd_ms", "bwd_ms", "fwd_peer",
"bwd_peer", "torch", "layout", "padded_to"}: fwd_ms, the median of --repeats forward calls;
bwd_ms, of as many backward calls, each after an untimed forward, into fresh gradients; the
peers' names; padded_to, the head dim q, k and v were zero-padded to where --value-head-dim
differs from --head-dim, else 0.
Exits 3 when torch cannot be imported (the benchmark then reports no peer).

--serve keeps it running for paired measurements (rfa_kernel_bench --rfa_paired): it prints
"ready torch=<version>", then answers each request line "<fwd|bwd> <dtype> <full|causal>" (a
dtype --dtypes names) with the milliseconds of one call (a backward: the backward alone, after an
untimed forward, into fresh gradients), "name <fwd|bwd> <dtype> <full|causal>" with what that
call ran, or "error <why>"; it exits at end of input.

--layout picks the memory the peer reads: "bhsd" (default), contiguous [B][H][S][d] tensors, the
layout PyTorch's kernels prefer; "bshd", views (transpose(1, 2)) of contiguous [B][S][H][d]
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
    return statistics.median(fn() for _ in range(repeats))


def one_call_ms(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


DTYPE_NAMES = ("float32", "bfloat16", "float16")
MASK_NAMES = ("full", "causal")


class Variant:
    """The problem's variant beyond its shape: K's and V's heads, the window (0: none), the soft
    cap (0: none) and the documents (cumulative boundaries, all entries' lists one after the
    other, and the batch + 1 offsets that cut them per entry; no bounds: one document; no offsets:
    one list for every entry), as rfa_kernel_bench passes them."""

    def __init__(self, heads, kv_heads=0, window=0, softcap=0.0, doc_bounds=(), doc_offsets=()):
        self.heads = heads
        self.kv_heads = kv_heads or heads
        self.window = window
        self.softcap = softcap
        self.doc_bounds = list(doc_bounds)
        self.doc_offsets = list(doc_offsets)

    def grouped(self):
        return self.kv_heads != self.heads

    def masked(self):
        """Whether the mask is more than causal or none."""
        return self.window > 0 or len(self.doc_bounds) > 0

    def entry_bounds(self, entry):
        if not self.doc_bounds:
            return []
        if not self.doc_offsets:
            return self.doc_bounds
        return self.doc_bounds[self.doc_offsets[entry]:self.doc_offsets[entry + 1]]

    def document_ids(self, torch, batch, seq):
        """[batch][seq] the document of each position (all 0 for one document)."""
        ids = torch.zeros((batch, seq), dtype=torch.int32)
        for e in range(batch):
            bounds = self.entry_bounds(e)
            for d in range(len(bounds) - 1):
                ids[e, bounds[d]:bounds[d + 1]] = d
        return ids

    def visible(self, torch, causal, batch, seq):
        """The boolean mask SDPA takes (True: the key takes part): [B][1][S][S] with documents
        per entry, else [S][S]."""
        q = torch.arange(seq).reshape(seq, 1)
        k = torch.arange(seq).reshape(1, seq)
        keep = torch.ones((seq, seq), dtype=torch.bool)
        if causal:
            keep = keep & (k <= q)
        if self.window > 0:
            keep = keep & (q - k < self.window)
        if self.doc_bounds:
            per_entry = len(self.doc_offsets) > 0
            ids = self.document_ids(torch, batch if per_entry else 1, seq)
            same = ids.reshape(-1, 1, seq, 1) == ids.reshape(-1, 1, 1, seq)
            keep = same & keep if per_entry else same[0, 0] & keep
        return keep

    def mask_mod(self, torch, causal, batch, seq):
        """FlexAttention's mask_mod for the same mask, or None where every key is visible."""
        if not causal and not self.masked():
            return None
        window = self.window
        ids = self.document_ids(torch, batch, seq) if self.doc_bounds else None

        def mask(b, h, q, k):
            keep = q >= k if causal else q == q
            if window > 0:
                keep = keep & (q - k < window)
            if ids is not None:
                keep = keep & (ids[b, q] == ids[b, k])
            return keep

        return mask


class Peers:
    """PyTorch's calls for one problem (see the module's text): forward(q, k, v, causal) is the
    timed forward; backward_output(q, k, v, causal) the untimed forward whose output the timed
    backward runs through. fwd_name(dtype, causal) and bwd_name name what ran."""

    def __init__(self, torch, F, backend, shape, variant):
        self.torch, self.F, self.backend = torch, F, backend
        self.shape, self.variant = shape, variant
        self.scale = scale_argument(shape)
        self.gqa = {"enable_gqa": True} if variant.grouped() else {}
        self.masks = {}  # causal -> SDPA's boolean mask
        self.flex = None  # FlexAttention compiled, once it has run
        self.block_masks = {}  # causal -> FlexAttention's block mask
        self.flex_failed = {}  # (dtype, causal) -> why FlexAttention could not run
        self.bwd_name = ("eager math" if variant.softcap > 0 else
                         "SDPA flash, boolean mask" if variant.masked() else "SDPA flash")

    def wants_flex(self):
        return self.variant.softcap > 0 or self.variant.masked()

    def fwd_name(self, dtype, causal):
        if not self.wants_flex():
            return "SDPA flash"
        if (dtype, causal) in self.flex_failed:
            return f"{self.bwd_name} (FlexAttention: {self.flex_failed[dtype, causal]})"
        return "FlexAttention compiled"

    def sdpa_mask(self, causal):
        if causal not in self.masks:
            b, _, s, _, _ = self.shape
            self.masks[causal] = self.variant.visible(self.torch, causal, b, s)
        return self.masks[causal]

    def sdpa(self, q, k, v, causal):
        with self.backend():
            if self.variant.masked():
                return self.F.scaled_dot_product_attention(q, k, v, attn_mask=self.sdpa_mask(causal), **self.gqa,
                                                           **self.scale)
            return self.F.scaled_dot_product_attention(q, k, v, is_causal=causal, **self.gqa, **self.scale)

    def eager(self, q, k, v, causal):
        torch = self.torch
        d = self.shape[3]
        if self.variant.grouped():
            group = self.variant.heads // self.variant.kv_heads
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        s = (q @ k.transpose(-2, -1)).float() * d ** -0.5
        cap = self.variant.softcap
        s = cap * torch.tanh(s / cap)
        if causal or self.variant.masked():
            s = s.masked_fill(~self.sdpa_mask(causal), float("-inf"))
        return torch.softmax(s, dim=-1).to(q.dtype) @ v

    def flex_call(self, q, k, v, causal):
        if self.flex is None:
            from torch.nn.attention.flex_attention import create_block_mask, flex_attention
            self.flex = self.torch.compile(flex_attention, dynamic=False)
            self.create_block_mask = create_block_mask
        if causal not in self.block_masks:
            b, _, s, _, _ = self.shape
            mask = self.variant.mask_mod(self.torch, causal, b, s)
            per_entry = len(self.variant.doc_offsets) > 0
            self.block_masks[causal] = None if mask is None else self.create_block_mask(
                mask, b if per_entry else None, None, s, s, device="cpu")
        cap = self.variant.softcap
        score_mod = None
        if cap > 0:
            tanh = self.torch.tanh

            def score_mod(score, b, h, q_idx, k_idx):
                return cap * tanh(score / cap)

        with self.torch.no_grad():  # FlexAttention has no CPU backward
            return self.flex(q.detach(), k.detach(), v.detach(), score_mod=score_mod,
                             block_mask=self.block_masks[causal], scale=self.shape[3] ** -0.5, **self.gqa)

    def backward_output(self, q, k, v, causal):
        return self.eager(q, k, v, causal) if self.variant.softcap > 0 else self.sdpa(q, k, v, causal)

    def forward(self, q, k, v, causal):
        if self.wants_flex() and (q.dtype, causal) not in self.flex_failed:
            try:
                return self.flex_call(q, k, v, causal)
            except Exception as e:  # an older torch, no compiler: the backward's forward instead
                why = str(e).splitlines()[0][:80] if str(e) else ""
                self.flex_failed[q.dtype, causal] = f"{type(e).__name__}: {why}"
        with self.torch.no_grad():
            return self.backward_output(q, k, v, causal)

    def fwd_ms(self, inputs, causal):
        q, k, v, _ = inputs
        return one_call_ms(lambda: self.forward(q, k, v, causal))

    def bwd_ms(self, inputs, causal):
        q, k, v, dout = inputs
        out = self.backward_output(q, k, v, causal)
        q.grad = k.grad = v.grad = None  # written, not accumulated into, as rfa's are
        return one_call_ms(lambda: out.backward(dout))


def serve(torch, F, backend, shape, layout, requests, reply, variant=None, dtypes=DTYPE_NAMES):
    """Answers timing requests (see the module's text) from the lines of `requests`; `reply`
    prints one line. Inputs are made once per (dtype, mask) and reused, as rfa's are."""
    inputs = {}
    peers = Peers(torch, F, backend, shape, variant or Variant(shape[1]))
    reply(f"ready torch={torch.__version__}")
    for line in requests:
        words = line.split()
        if len(words) == 4 and words[0] == "name" and words[1] in ("fwd", "bwd") and words[2] in dtypes \
                and words[3] in MASK_NAMES:
            causal = words[3] == "causal"
            reply(peers.fwd_name(getattr(torch, words[2]), causal) if words[1] == "fwd" else peers.bwd_name)
            continue
        if len(words) != 3 or words[0] not in ("fwd", "bwd") or words[1] not in dtypes or words[2] not in MASK_NAMES:
            reply(f"error expected '<fwd|bwd> <{'|'.join(dtypes)}> <{'|'.join(MASK_NAMES)}>', got {line.strip()!r}")
            continue
        pass_, dtype_name, mask = words
        key = (dtype_name, mask)
        if key not in inputs:
            inputs[key] = make_inputs(torch, shape, getattr(torch, dtype_name), layout, peers.variant.kv_heads)
        causal = mask == "causal"
        ms = peers.fwd_ms(inputs[key], causal) if pass_ == "fwd" else peers.bwd_ms(inputs[key], causal)
        reply(f"{ms:.6f}")


def scale_argument(shape):
    """The keyword arguments that set SDPA's scale: 1/sqrt(d) where q and k are padded beyond d
    (their default would be 1/sqrt of the padded width; the keyword needs torch 2.1), none
    otherwise. shape is (B, H, S, d, dv)."""
    d, dv = shape[3], shape[4]
    return {"scale": d ** -0.5} if dv > d else {}


def make_inputs(torch, shape, dtype, layout, kv_heads=0):
    """q, k, v (requiring gradients) and dout of the logical shape (B, H, S, w) in `layout`, k and
    v with kv_heads heads (0: H); shape is (B, H, S, d, dv) and w = max(d, dv). Where d and dv
    differ (MLA's 192 / 128), the narrower ones are zero-padded to w, the usual way to run such
    heads on a flash kernel that takes one head dim (PyTorch's CPU one does): zeros add nothing
    to Q K^T, and a V padded with zeros gives an output whose padding is zero (q and k padded
    beyond d need the scale 1/sqrt(d) passed: scale_argument())."""
    b, h, s, d, dv = shape
    w = max(d, dv)

    def tensor(heads, width, grad):
        if layout == "bhsd":
            t = torch.randn((b, heads, s, w), dtype=dtype)
        else:
            t = torch.randn((b, s, heads, w), dtype=dtype).transpose(1, 2)
        if width < w:
            t[..., width:] = 0
        return t.requires_grad_() if grad else t

    hk = kv_heads or h
    return tensor(h, d, True), tensor(hk, d, True), tensor(hk, dv, True), tensor(h, dv, False)


def whole_numbers(text):
    """A comma-separated list of whole numbers (argparse's type)."""
    return [int(x) for x in text.split(",")]


def dtype_list(text):
    names = text.split(",")
    if any(n not in DTYPE_NAMES for n in names):
        raise argparse.ArgumentTypeError(f"dtypes among {', '.join(DTYPE_NAMES)}, got {text!r}")
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=0, help="K's and V's heads (0: --heads)")
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--value-head-dim", type=int, default=0, help="v's head dim where it differs (0: --head-dim)")
    ap.add_argument("--window", type=int, default=0, help="sliding window: q - k < W (0: none)")
    ap.add_argument("--softcap", type=float, default=0.0, help="soft cap of the scaled scores (0: none)")
    ap.add_argument("--doc-bounds", type=whole_numbers, default=[], help="documents' cumulative boundaries")
    ap.add_argument("--doc-offsets", type=whole_numbers, default=[], help="batch + 1 offsets into --doc-bounds")
    ap.add_argument("--dtypes", type=dtype_list, default=["float32", "bfloat16"])
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
    variant = Variant(args.heads, args.kv_heads, args.window, args.softcap, args.doc_bounds, args.doc_offsets)
    if args.serve:
        serve(torch, F, backend, shape, args.layout, sys.stdin, lambda line: print(line, flush=True), variant,
              args.dtypes)
        return
    padded = max(shape[3], shape[4]) if shape[3] != shape[4] else 0
    peers = Peers(torch, F, backend, shape, variant)
    for dtype_name in args.dtypes:
        for causal in (False, True):
            inputs = make_inputs(torch, shape, getattr(torch, dtype_name), args.layout, variant.kv_heads)
            fwd = median_ms(lambda: peers.fwd_ms(inputs, causal), args.repeats)
            bwd = median_ms(lambda: peers.bwd_ms(inputs, causal), args.repeats)
            print(json.dumps({"dtype": dtype_name, "causal": causal, "fwd_ms": fwd, "bwd_ms": bwd,
                              "fwd_peer": peers.fwd_name(inputs[0].dtype, causal), "bwd_peer": peers.bwd_name,
                              "torch": torch.__version__, "layout": args.layout, "padded_to": padded}), flush=True)


if __name__ == "__main__":
    main()
