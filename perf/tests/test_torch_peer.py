# SPDX-License-Identifier: BSD-3-Clause
"""Tests of perf/kernels/torch_cpu_peer.py without PyTorch: a stand-in torch module records how
the peer builds its inputs, so the two layouts it offers are checked for the memory they
describe (contiguous [B][H][S][d], or transposed views of [B][S][H][d] as rfa stores them)."""
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
        self.shape = (2, 4, 64, 16)  # B, H, S, d

    def test_bhsd_is_contiguous_in_torch_order(self):
        q, k, v, dout = self.peer.make_inputs(self.torch, self.shape, "float32", "bhsd")
        for t in (q, k, v, dout):
            self.assertEqual(t.shape, self.shape)
            self.assertEqual(t.storage_shape, self.shape)
            self.assertIsNone(t.transposed)
            self.assertEqual(t.dtype, "float32")
        self.assertTrue(all(t.requires_grad for t in (q, k, v)))
        self.assertFalse(dout.requires_grad)

    def test_bshd_views_rfa_memory(self):
        q, k, v, dout = self.peer.make_inputs(self.torch, self.shape, "bfloat16", "bshd")
        b, h, s, d = self.shape
        for t in (q, k, v, dout):
            self.assertEqual(t.shape, self.shape, "the peer must see the logical (B, H, S, d) shape")
            self.assertEqual(t.storage_shape, (b, s, h, d), "the memory must be rfa's [B][S][H][d]")
            self.assertEqual(t.transposed, (1, 2))
            self.assertEqual(t.dtype, "bfloat16")
        self.assertTrue(all(t.requires_grad for t in (q, k, v)))
        self.assertFalse(dout.requires_grad)

    def test_unknown_layout_is_refused(self):
        with mock.patch.object(sys, "argv", ["torch_cpu_peer.py", "--layout", "bsdh"]), \
                mock.patch("sys.stderr"), self.assertRaises(SystemExit) as exit_:
            self.peer.main()
        self.assertEqual(exit_.exception.code, 2)


if __name__ == "__main__":
    unittest.main()
