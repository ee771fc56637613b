# SPDX-License-Identifier: BSD-3-Clause
"""A stand-in for the part of Spack's package API that packaging/spack/packages/*/package.py
use, so that the recipes load and run without Spack: directives are recorded, specs are
concrete and small (FakeSpec), and the tools a recipe calls (which, Executable,
cache_extra_test_sources) are whatever the caller passes to load_recipe: recorders for the
recipe check, real programs for the smoke run."""
import ast
import os
import re
import sys
import types

RECORDED = []  # (directive, args, kwargs) of every directive of the loaded recipes


def directive(name):
    def record(*args, **kwargs):
        RECORDED.append((name, args, kwargs))
    return record


class Prefix(str):
    """An install prefix: prefix.include is prefix/include, as in Spack."""

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return Prefix(os.path.join(self, name))


class FakeSpec:
    """A concrete spec: its name, the boolean variants that are on, the valued variants
    (name -> tuple of values) and the dependencies (name -> FakeSpec; a virtual such as mpi
    is listed under its own name and its provider's). Other attributes (mpicc, command) are
    passed as keywords."""

    def __init__(self, name, on=(), values=None, deps=None, prefix=None, **attributes):
        self.name = name
        self.on = set(on)
        self.values = {k: tuple(v) for k, v in (values or {}).items()}
        self.variants = {k: types.SimpleNamespace(value=v) for k, v in self.values.items()}
        self.deps = deps or {}
        self.prefix = Prefix(prefix or f"/spack/{name}")
        self.__dict__.update(attributes)

    def __getitem__(self, name):
        return self.deps[name]

    def satisfies(self, constraint):
        for token in constraint.split():
            if token.startswith("@"):
                versions, token = re.match(r"@([\d.:]*)(.*)", token).groups()
                if not version_in(getattr(self, "version", None), versions):
                    return False
            if not token:
                continue
            if token.startswith("^"):
                name, rest = re.match(r"\^([\w-]+)(.*)", token).groups()
                dep = self.deps.get(name)
                if dep is None or (rest and not dep.satisfies(rest)):
                    return False
            elif "=" in token:
                key, value = token.split("=", 1)
                if value not in self.values.get(key, ()):
                    return False
            elif not all((v in self.on) == (sign == "+") for sign, v in re.findall(r"([+~])(\w+)", token)):
                return False
        return True


def version_in(version, versions):
    """Whether `version` ("4.6.1") is in Spack's range `versions` ("3.4:", ":4", "5.2.2"): the
    upper end names a prefix, so ":4" takes every 4.x. A spec without a version is in no range."""
    if version is None:
        return False
    low, colon, high = versions.partition(":")
    if not colon:
        high = low
    number = tuple(int(x) for x in version.split("."))
    if low and number < tuple(int(x) for x in low.split(".")):
        return False
    top = tuple(int(x) for x in high.split(".")) if high else None
    return top is None or number[:len(top)] <= top


def split_dependency(text):
    """'kokkos+cuda cuda_arch=90' -> ('kokkos', {'+cuda', 'cuda_arch=90'}); versions are left out."""
    name = re.match(r"[\w-]+", text).group(0)
    rest = text[len(name):]
    tokens = set(re.findall(r"[+~]\w+", rest)) | set(re.findall(r"\w+=\S+", rest))
    return name, tokens


def dependency_constraints(spec, name):
    """What the recorded depends_on directives ask of dependency `name` in `spec`."""
    tokens = set()
    for d, args, kwargs in RECORDED:
        if d == "depends_on" and (kwargs.get("when") is None or spec.satisfies(kwargs["when"])):
            dep, asked = split_dependency(args[0])
            if dep == name:
                tokens |= asked
    return tokens


def conflicts_of(spec):
    """The messages of the recorded conflicts that `spec` runs into."""
    return [kwargs.get("msg", args[0]) for d, args, kwargs in RECORDED
            if d == "conflicts" and spec.satisfies(args[0]) and spec.satisfies(kwargs.get("when", ""))]


class Package:
    run_tests = False

    def __init__(self, spec):
        self.spec = spec


class CMakePackage(Package):

    @staticmethod
    def define(name, value):
        """As Spack's: -DNAME:BOOL=ON|OFF for booleans, -DNAME:STRING=value otherwise."""
        if isinstance(value, bool):
            return f"-D{name}:BOOL={'ON' if value else 'OFF'}"
        return f"-D{name}:STRING={value}"

    def define_from_variant(self, name, variant):
        return self.define(name, self.spec.satisfies("+" + variant))


class CudaPackage:
    # A part of Spack's list: enough for the recipe's loop over it and the checks.
    cuda_arch_values = ("60", "70", "75", "80", "86", "89", "90", "100", "120")


def run_after(phase):
    def mark(function):
        function.run_after = phase
        return function
    return mark


def on_package_attributes(**attributes):
    def mark(function):
        function.on_package_attributes = attributes
        return function
    return mark


def load_recipe(path, class_name, **tools):
    """Executes the recipe at `path` against the stand-in and returns its class. `tools` are
    the names the recipe gets from spack.package besides the directives (which, Executable,
    cache_extra_test_sources)."""
    source = open(path, encoding="utf-8").read()
    ast.parse(source, path)  # a syntax error fails here, with its line
    fake = types.ModuleType("spack.package")
    for name in ("version", "variant", "depends_on", "conflicts", "license"):
        setattr(fake, name, directive(name))
    fake.CMakePackage, fake.CudaPackage, fake.Package = CMakePackage, CudaPackage, Package
    fake.run_after, fake.on_package_attributes = run_after, on_package_attributes
    for name, tool in tools.items():
        setattr(fake, name, tool)
    fake.__all__ = [n for n in dir(fake) if not n.startswith("_")]
    sys.modules["spack"] = types.ModuleType("spack")
    sys.modules["spack.package"] = fake
    namespace = {}
    exec(compile(source, path, "exec"), namespace)
    return namespace[class_name]


def parse_cmake_args(args):
    """['-DNAME:BOOL=ON', ...] -> {'NAME': 'ON', ...}"""
    parsed = {}
    for arg in args:
        name, value = re.match(r"-D(\w+)(?::\w+)?=(.*)", arg).groups()
        parsed[name] = value
    return parsed
