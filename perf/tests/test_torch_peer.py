# SPDX-License-Identifier: BSD-3-Clause
"""Tests of perf/kernels/torch_cpu_peer.py without PyTorch: a stand-in torch module records how
the peer builds its inputs, so the two layouts it offers are checked for the memory they
describe (contiguous [B][H][S][d], or transposed views of [B][S][H][d] as rfa stores them), and
what its serving mode (rfa_kernel_bench --rfa_paired) calls and answers; numpy stands in for
torch's tensors where the peer builds the variant's masks, which must keep exactly the keys rfa
keeps; and which of PyTorch's calls the peer picks for each variant."""
import contextlib
import importlib.machinery
import importlib.util
import os
import sys
import types
import unittest
from unittest import mock

import numpy

import perf_tool

SCRIPT = os.path.join(perf_tool.PERF, "kernels", "torch_cpu_peer.py")


class FakeTensor:
    """What the peer may do with a tensor: transpose it and ask for gradients."""

    def __init__(self, shape, dtype, requires_grad=False, storage_shape=None, transposed=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.requires_grad = requires_grad
        self.storage_shape = tuple(storage_shape or shape)  # the contiguous allocation's shape
        self.transposed = transposed  # the two dimensions swapped, or None

    def transpose(self, a, b):
        shape = list(self.shape)
        shape[a], shape[b] = shape[b], shape[a]
        return FakeTensor(shape, self.dtype, self.requires_grad, self.storage_shape, (a, b))

    def requires_grad_(self):
        self.requires_grad = True
        return self

    def __setitem__(self, index, value):
        # The peer zeroes a tail of the last dimension: t[..., w:] = 0.
        self.zeroed_from = index[-1].start


def fake_torch():
    torch = types.ModuleType("torch")
    torch.float32, torch.bfloat16 = "float32", "bfloat16"
    torch.randn = lambda shape, dtype=None, requires_grad=False: FakeTensor(shape, dtype, requires_grad)
    torch.no_grad = contextlib.nullcontext
    torch.nn = types.ModuleType("torch.nn")
    torch.nn.functional = types.ModuleType("torch.nn.functional")
    return torch


def numpy_torch():
    """The tensor operations the variant's masks use, on numpy arrays."""
    torch = types.ModuleType("torch")
    torch.bool, torch.int32 = bool, numpy.int32
    torch.arange = numpy.arange
    torch.ones = lambda shape, dtype=None: numpy.ones(shape, dtype=dtype)
    torch.zeros = lambda shape, dtype=None: numpy.zeros(shape, dtype=dtype)
    torch.nn = types.ModuleType("torch.nn")
    torch.nn.functional = types.ModuleType("torch.nn.functional")
    return torch


def load_peer(torch):
    with mock.patch.dict(sys.modules, {"torch": torch, "torch.nn": torch.nn, "torch.nn.functional": torch.nn.functional}):
        loader = importlib.machinery.SourceFileLoader("torch_cpu_peer_under_test", SCRIPT)
        module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
        loader.exec_module(module)
    return module


class TorchPeerInputsTest(unittest.TestCase):
    def setUp(self):
        self.torch = fake_torch()
        self.peer = load_peer(self.torch)
        self.shape = (2, 4, 64, 16, 16)  # B, H, S, d, dv

    def test_bhsd_is_contiguous_in_torch_order(self):
        q, k, v, dout = self.peer.make_inputs(self.torch, self.shape, "float32", "bhsd")
        for t in (q, k, v, dout):
            self.assertEqual(t.shape, self.shape[:4])
            self.assertEqual(t.storage_shape, self.shape[:4])
            self.assertIsNone(t.transposed)
            self.assertEqual(t.dtype, "float32")
        self.assertTrue(all(t.requires_grad for t in (q, k, v)))
        self.assertFalse(dout.requires_grad)

    def test_bshd_views_rfa_memory(self):
        q, k, v, dout = self.peer.make_inputs(self.torch, self.shape, "bfloat16", "bshd")
        b, h, s, d, _ = self.shape
        for t in (q, k, v, dout):
            self.assertEqual(t.shape, (b, h, s, d), "the peer must see the logical (B, H, S, d) shape")
            self.assertEqual(t.storage_shape, (b, s, h, d), "the memory must be rfa's [B][S][H][d]")
            self.assertEqual(t.transposed, (1, 2))
            self.assertEqual(t.dtype, "bfloat16")
        self.assertTrue(all(t.requires_grad for t in (q, k, v)))
        self.assertFalse(dout.requires_grad)

    def test_scale_is_given_only_where_q_and_k_are_padded(self):
        self.assertEqual(self.peer.scale_argument((1, 1, 8, 16, 16)), {})
        self.assertEqual(self.peer.scale_argument((1, 1, 8, 192, 128)), {}, "q and k keep their width")
        self.assertEqual(self.peer.scale_argument((1, 1, 8, 16, 40)), {"scale": 16 ** -0.5})

    def test_value_head_dim_pads_the_narrower_tensors_with_zeros(self):
        b, h, s = 2, 4, 64
        for layout in ("bhsd", "bshd"):
            q, k, v, dout = self.peer.make_inputs(self.torch, (b, h, s, 24, 16), "float32", layout)
            for t in (q, k, v, dout):
                self.assertEqual(t.shape, (b, h, s, 24), "every tensor is as wide as the wider head dim")
            self.assertFalse(hasattr(q, "zeroed_from") or hasattr(k, "zeroed_from"), "q and k are 24 wide")
            self.assertEqual(v.zeroed_from, 16, "v is zero past its 16 values")
            self.assertEqual(dout.zeroed_from, 16, "and so is dout")
            self.assertTrue(v.requires_grad)
        q, k, v, dout = self.peer.make_inputs(self.torch, (b, h, s, 16, 40), "float32", "bhsd")
        self.assertEqual(q.zeroed_from, 16, "q and k zero-padded to a wider v")
        self.assertEqual(k.zeroed_from, 16)
        self.assertFalse(hasattr(v, "zeroed_from"))

    def serve(self, requests):
        """Runs the serving loop on `requests`; returns its reply lines and the calls it made."""
        calls = []

        class FakeOut:
            def backward(self, dout):
                calls.append(("backward", dout, self.q.grad))

        def sdpa(q, k, v, is_causal, **kwargs):
            self.assertEqual(kwargs, {}, "one head dim: SDPA's own scale, no keyword")
            calls.append(("forward", q.dtype, is_causal))
            out = FakeOut()
            out.q = q
            return out

        F = types.SimpleNamespace(scaled_dot_product_attention=sdpa)
        self.torch.__version__ = "0.fake"
        made = []
        real_make_inputs = self.peer.make_inputs

        def counting_make_inputs(*args):
            made.append(args[2])
            inputs = real_make_inputs(*args)
            inputs[0].grad = "stale"  # a gradient a previous backward left
            return inputs

        replies = []
        with mock.patch.object(self.peer, "make_inputs", counting_make_inputs):
            self.peer.serve(self.torch, F, contextlib.nullcontext, self.shape, "bhsd", requests, replies.append)
        return replies, calls, made

    def test_serve_greets_then_times_one_call_per_request(self):
        replies, calls, made = self.serve(["fwd float32 causal\n", "fwd float32 causal\n", "bwd bfloat16 full\n"])
        self.assertEqual(replies[0], "ready torch=0.fake")
        self.assertEqual(len(replies), 4)
        for reply in replies[1:]:
            self.assertGreaterEqual(float(reply), 0.0)
        self.assertEqual(made, ["float32", "bfloat16"], "inputs are made once per (dtype, mask) and reused")
        self.assertEqual(calls[:2], [("forward", "float32", True)] * 2)
        # A backward request: one untimed forward, then the backward into fresh gradients.
        self.assertEqual(calls[2], ("forward", "bfloat16", False))
        self.assertEqual(calls[3][0], "backward")
        self.assertIsNone(calls[3][2], "gradients are cleared before the timed backward")
        self.assertEqual(len(calls), 4)

    def test_serve_answers_a_bad_request_with_an_error_and_goes_on(self):
        replies, calls, _ = self.serve(["fwd float64 full\n", "sideways float32 full\n", "fwd float32\n",
                                        "fwd float32 full\n"])
        self.assertEqual(len(replies), 5)
        for reply in replies[1:4]:
            self.assertTrue(reply.startswith("error expected '<fwd|bwd> <float32|bfloat16|float16> <full|causal>'"),
                            reply)
        self.assertGreaterEqual(float(replies[4]), 0.0)
        self.assertEqual(calls, [("forward", "float32", False)])

    def test_serve_names_what_each_call_runs(self):
        replies, calls, _ = self.serve(["name fwd float32 causal\n", "name bwd bfloat16 full\n",
                                        "name fwd float64 full\n"])
        self.assertEqual(replies[1:3], ["SDPA flash", "SDPA flash"])
        self.assertTrue(replies[3].startswith("error expected"), replies[3])
        self.assertEqual(calls, [], "naming runs nothing")

    def test_grouped_heads_give_k_and_v_their_own_head_count(self):
        q, k, v, dout = self.peer.make_inputs(self.torch, self.shape, "float32", "bshd", 2)
        b, h, s, d, _ = self.shape
        self.assertEqual((q.shape, dout.shape), ((b, h, s, d), (b, h, s, d)))
        self.assertEqual((k.shape, v.shape), ((b, 2, s, d), (b, 2, s, d)))
        self.assertEqual(k.storage_shape, (b, s, 2, d))

    def test_unknown_layout_is_refused(self):
        with mock.patch.object(sys, "argv", ["torch_cpu_peer.py", "--layout", "bsdh"]), \
                mock.patch("sys.stderr"), self.assertRaises(SystemExit) as exit_:
            self.peer.main()
        self.assertEqual(exit_.exception.code, 2)



def rfa_keeps(variant, entry, q, k, causal):
    """Whether rfa's mask keeps key k for query q of batch entry `entry`: k <= q where causal,
    q - k < window where there is one, and the same document (the variant's words, restated)."""
    if causal and k > q:
        return False
    if variant.window > 0 and q - k >= variant.window:
        return False
    bounds = variant.entry_bounds(entry)
    doc = lambda pos: sum(1 for b in bounds[1:-1] if b <= pos)  # noqa: E731
    return not bounds or doc(q) == doc(k)


class TorchPeerVariantTest(unittest.TestCase):
    """The masks the peer gives SDPA and FlexAttention for a window and documents, with numpy
    for torch's tensors: each kept key must be one rfa keeps, at and either side of every edge."""

    B, S = 2, 13

    def setUp(self):
        self.torch = numpy_torch()
        self.peer = load_peer(self.torch)

    def variants(self):
        V = self.peer.Variant
        return {
            "window": V(4, window=3),
            "window 1": V(4, window=1),
            "window past the sequence": V(4, window=self.S + 1),
            "documents": V(4, doc_bounds=[0, 5, 6, self.S]),
            "documents per entry, one empty": V(4, doc_bounds=[0, 4, 4, self.S, 0, self.S], doc_offsets=[0, 4, 6]),
            "window and documents": V(4, kv_heads=2, window=4, doc_bounds=[0, 7, self.S]),
        }

    def test_sdpa_mask_keeps_what_rfa_keeps(self):
        for name, variant in self.variants().items():
            for causal in (False, True):
                keep = self.peer.Variant.visible(variant, self.torch, causal, self.B, self.S)
                per_entry = len(variant.doc_offsets) > 0
                self.assertEqual(keep.shape, (self.B, 1, self.S, self.S) if per_entry else (self.S, self.S), name)
                for e in range(self.B):
                    got = keep[e, 0] if per_entry else keep
                    want = [[rfa_keeps(variant, e, q, k, causal) for k in range(self.S)] for q in range(self.S)]
                    self.assertEqual(got.tolist(), want, f"{name}, causal={causal}, entry {e}")

    def test_flex_mask_keeps_what_rfa_keeps(self):
        for name, variant in self.variants().items():
            for causal in (False, True):
                mask = variant.mask_mod(self.torch, causal, self.B, self.S)
                for e in range(self.B):
                    for q in range(self.S):
                        for k in range(self.S):
                            self.assertEqual(bool(mask(e, 0, q, k)), rfa_keeps(variant, e, q, k, causal),
                                             f"{name}, causal={causal}, entry {e}, q={q}, k={k}")

    def test_the_masks_keep_as_many_scores_as_the_benchmark_counts(self):
        # rfa_kernel_bench's perf.rfa_kernel_bench_variant counts 2890 visible scores (S=96,
        # causal, window 20, documents 30,30 and 50 per entry) through perf/common's
        # visible_scores: the peer's masks must keep as many.
        variant = self.peer.Variant(4, kv_heads=2, window=20, softcap=30.0, doc_bounds=[0, 30, 60, 96, 0, 50, 96],
                                    doc_offsets=[0, 4, 7])
        self.assertEqual(int(variant.visible(self.torch, True, 2, 96).sum()), 2890)
        mask = variant.mask_mod(self.torch, True, 2, 96)
        self.assertEqual(sum(bool(mask(e, 0, q, k)) for e in range(2) for q in range(96) for k in range(96)), 2890)

    def test_a_plain_full_mask_needs_no_mask(self):
        plain = self.peer.Variant(4, kv_heads=1)
        self.assertIsNone(plain.mask_mod(self.torch, False, self.B, self.S))
        self.assertFalse(plain.masked())
        self.assertTrue(plain.grouped())

    def test_each_variant_gets_pytorchs_fastest_calls(self):
        V = self.peer.Variant
        shape = (1, 4, self.S, 8, 8)
        cases = [(V(4), "SDPA flash", "SDPA flash"),
                 (V(4, kv_heads=2), "SDPA flash", "SDPA flash"),
                 (V(4, window=3), "FlexAttention compiled", "SDPA flash, boolean mask"),
                 (V(4, doc_bounds=[0, 3, self.S]), "FlexAttention compiled", "SDPA flash, boolean mask"),
                 (V(4, softcap=30.0), "FlexAttention compiled", "eager math")]
        for variant, fwd, bwd in cases:
            calls = []

            def sdpa(q, k, v, attn_mask=None, is_causal=False, **kwargs):
                calls.append(("sdpa", attn_mask is not None, is_causal, kwargs))
                return "sdpa out"

            F = types.SimpleNamespace(scaled_dot_product_attention=sdpa)
            peers = self.peer.Peers(self.torch, F, contextlib.nullcontext, shape, variant)
            self.assertEqual((peers.fwd_name("float32", True), peers.bwd_name), (fwd, bwd))
            # The backward runs through what its name says: SDPA with is_causal for a plain
            # mask, with the boolean mask (and is_causal off) for a window or documents, and
            # eager math, without SDPA, for a soft cap.
            with mock.patch.object(peers, "eager", lambda q, k, v, causal: calls.append(("eager", causal)) or "eager out"):
                out = peers.backward_output("q", "k", "v", True)
            gqa = {"enable_gqa": True} if variant.grouped() else {}
            want = {"SDPA flash": ("sdpa out", [("sdpa", False, True, gqa)]),
                    "SDPA flash, boolean mask": ("sdpa out", [("sdpa", True, False, gqa)]),
                    "eager math": ("eager out", [("eager", True)])}[bwd]
            self.assertEqual((out, calls), want, bwd)

    def test_a_forward_flexattention_cannot_run_falls_back_and_says_so(self):
        calls = []

        def sdpa(q, k, v, attn_mask=None, is_causal=False, **kwargs):
            calls.append((attn_mask is not None, is_causal, kwargs))
            return "out"

        def no_compiler(fn, dynamic):
            raise RuntimeError("no C++ compiler found")

        self.torch.compile = no_compiler
        self.torch.no_grad = contextlib.nullcontext
        flex_module = types.ModuleType("torch.nn.attention.flex_attention")
        flex_module.flex_attention = flex_module.create_block_mask = None
        F = types.SimpleNamespace(scaled_dot_product_attention=sdpa)
        peers = self.peer.Peers(self.torch, F, contextlib.nullcontext, (1, 4, self.S, 8, 8),
                                self.peer.Variant(4, kv_heads=2, window=3))
        q = types.SimpleNamespace(dtype="float16")
        with mock.patch.dict(sys.modules, {"torch.nn.attention.flex_attention": flex_module}):
            self.assertEqual(peers.forward(q, "k", "v", True), "out")
            self.assertEqual(peers.forward(q, "k", "v", True), "out")
        self.assertEqual(calls, [(True, False, {"enable_gqa": True})] * 2, "SDPA with the boolean mask, grouped heads")
        self.assertEqual(peers.fwd_name("float16", True),
                         "SDPA flash, boolean mask (FlexAttention: RuntimeError: no C++ compiler found)")
        self.assertEqual(peers.fwd_name("float16", False), "FlexAttention compiled", "each mask is tried on its own")
        self.assertEqual(peers.fwd_name("float32", True), "FlexAttention compiled", "and each dtype")


if __name__ == "__main__":
    unittest.main()
