# SPDX-License-Identifier: BSD-3-Clause
"""Tests of perf/kernels/torch_cpu_peer.py without PyTorch: a stand-in torch module records how
the peer builds its inputs, so the two layouts it offers are checked for the memory they
describe (contiguous [B][H][S][d], or transposed views of [B][S][H][d] as rfa stores them), and
what its serving mode (rfa_kernel_bench --rfa_paired) calls and answers."""
import contextlib
import importlib.machinery
import importlib.util
import os
import sys
import types
import unittest
from unittest import mock

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
        replies, calls, _ = self.serve(["fwd float16 full\n", "sideways float32 full\n", "fwd float32\n",
                                        "fwd float32 full\n"])
        self.assertEqual(len(replies), 5)
        for reply in replies[1:4]:
            self.assertTrue(reply.startswith("error expected '<fwd|bwd> <float32|bfloat16> <full|causal>'"), reply)
        self.assertGreaterEqual(float(replies[4]), 0.0)
        self.assertEqual(calls, [("forward", "float32", False)])

    def test_unknown_layout_is_refused(self):
        with mock.patch.object(sys, "argv", ["torch_cpu_peer.py", "--layout", "bsdh"]), \
                mock.patch("sys.stderr"), self.assertRaises(SystemExit) as exit_:
            self.peer.main()
        self.assertEqual(exit_.exception.code, 2)


if __name__ == "__main__":
    unittest.main()
