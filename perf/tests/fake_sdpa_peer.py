#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Stands in for perf/cuda/sdpa_peer.py in the benchmark's peer-parsing test: what a real run can
print, noise included (versions, a warning, a figure, per-measurement errors, a crash)."""
import sys

print("torch 9.9 cuda 13.0 cudnn 91000")
print("peak matmul_bf16 790.250000")
print("flash fwd_full 1.500000")
print("/site-packages/torch/x.py:1: UserWarning: something", file=sys.stderr)
print("flash fwd_causal 0.750000")
print("flash bwd_full error RuntimeError: No available kernel. Aborting execution.")
print("cudnn fwd_full 1.250000")
print("Traceback (most recent call last):")
sys.exit(3)
