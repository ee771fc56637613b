// SPDX-License-Identifier: BSD-3-Clause
// The set of live contexts: a handle that was destroyed, or never came from
// rfa_context_create, is an error with a message instead of undefined behaviour.
//
// A handle is a token, not the context's address: the allocator hands a freed context's
// memory to the next context created, so an address kept by the caller after
// rfa_context_destroy (a copy of the handle, a Fortran assignment) would have reached that
// newer context. Tokens count up and are never given out twice in a process.
// Looking a handle up costs a mutex and a hash lookup, nothing next to a collective call.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "context.hpp"

namespace rfa {
namespace capi {
namespace {

// The first token: a multiple of 16 from the clock and the process id, so that a made-up or
// stale handle of another process or run is unlikely to name a live context; below 2^24, so
// that the tokens after it do not wrap in any process's life (2^20 creations a second for a
// year reach 2^49 with 64-bit pointers; 32-bit ones wrap after 2^27 creations).
std::uintptr_t first_token() {
  const auto clock = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const std::uint64_t mixed = (clock ^ (std::uint64_t(::getpid()) << 12)) * 0x9e3779b97f4a7c15ull;
  return std::uintptr_t((mixed >> 40) & 0xfffff0u) + 16;
}

struct Registry {
  std::mutex mutex;
  std::unordered_map<std::uintptr_t, rfa_context_s*> live;
  std::uintptr_t last_token = first_token();
};

Registry& registry() {
  static Registry r;
  return r;
}

std::uintptr_t token_of(rfa_context_t handle) { return reinterpret_cast<std::uintptr_t>(handle); }

/// Takes the context behind `handle` out of the registry and returns it; nullptr where the
/// handle is not live or, with `forked_copy_only`, where the context is this process's own.
rfa_context_s* unregister_where(rfa_context_t handle, bool forked_copy_only) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto found = r.live.find(token_of(handle));
  if (found == r.live.end() || (forked_copy_only && !forked_since_creation(*found->second))) return nullptr;
  rfa_context_s* context = found->second;
  r.live.erase(found);
  return context;
}

}  // namespace

std::mutex& context_registry_mutex() { return registry().mutex; }

rfa_context_t register_context(rfa_context_s* context) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.last_token += 16;  // multiples of 16, as an allocation's address would be
  r.live.emplace(r.last_token, context);
  return reinterpret_cast<rfa_context_t>(r.last_token);
}

rfa_context_s* unregister_context(rfa_context_t handle) { return unregister_where(handle, false); }

rfa_context_s* unregister_forked_copy(rfa_context_t handle) { return unregister_where(handle, true); }

rfa_context_s* live_context(rfa_context_t handle) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto found = r.live.find(token_of(handle));
  return found == r.live.end() ? nullptr : found->second;
}

}  // namespace capi
}  // namespace rfa
