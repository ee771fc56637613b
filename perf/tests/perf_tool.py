# SPDX-License-Identifier: BSD-3-Clause
"""Loads one of perf/'s scripts (compare, plot, suite: files without a .py suffix) as a module,
so the tests call its functions directly."""
import importlib.machinery
import importlib.util
import os

PERF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def load(name):
    loader = importlib.machinery.SourceFileLoader("rfa_perf_" + name, os.path.join(PERF, name))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module
