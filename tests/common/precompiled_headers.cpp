// SPDX-License-Identifier: BSD-3-Clause
// The program that compiles the test suites' precompiled header (cmake/RfaTesting.cmake): an
// executable, so that the header is built with the flags of the test programs that reuse it.
int main() { return 0; }
