// SPDX-License-Identifier: BSD-3-Clause
// The set of live contexts: a handle that was destroyed, or never came from
// rfa_context_create, is an error with a message instead of undefined behaviour.
// Looking a handle up costs a mutex and a hash lookup, nothing next to a collective call.
#include <mutex>
#include <unordered_set>

#include "context.hpp"

namespace rfa {
namespace capi {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_set<const rfa_context_s*>& registry() {
  static std::unordered_set<const rfa_context_s*> live;
  return live;
}

}  // namespace

void register_context(const rfa_context_s* context) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().insert(context);
}

bool unregister_context(const rfa_context_s* context) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  return registry().erase(context) == 1;
}

bool is_live_context(const rfa_context_s* context) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  return registry().count(context) == 1;
}

}  // namespace capi
}  // namespace rfa
