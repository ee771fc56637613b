// SPDX-License-Identifier: BSD-3-Clause
// What MPI's thread level allows rfa's calls that use MPI (creation, the collective calls,
// destroy): below MPI_THREAD_MULTIPLE one thread at a time, and below MPI_THREAD_SERIALIZED
// only the thread that initialized MPI (MPI_Init gives MPI_THREAD_SINGLE in Open MPI). A call
// that would break the rule is refused on its rank before it makes any MPI call, instead of
// racing inside MPI; the other ranks of its collective then meet their deadline.
#pragma once

#include <new>

namespace rfa {
namespace capi {

/// Held for the whole of a call that uses MPI; takes nothing where MPI is not initialized or
/// already finalized (the call refuses that itself, with no MPI call).
/// Throws RFA_ERROR_INVALID_USAGE, naming `call` and the thread level, when MPI's level forbids
/// this thread to call now: another thread is inside such a call (below MPI_THREAD_MULTIPLE),
/// or this is not MPI's main thread (below MPI_THREAD_SERIALIZED). A call made while this
/// thread already holds a turn (destroy's agreement) takes part in it.
class MpiThreadTurn {
 public:
  explicit MpiThreadTurn(const char* call);
  /// The same without throwing: refused() then says whether the level forbids the call. For
  /// a creation on a CPU the build refuses (capi/refused_creation.hpp), which must not run the
  /// error's formatting.
  MpiThreadTurn(const char* call, std::nothrow_t) noexcept;
  ~MpiThreadTurn();
  MpiThreadTurn(const MpiThreadTurn&) = delete;
  MpiThreadTurn& operator=(const MpiThreadTurn&) = delete;

  bool refused() const { return refused_; }

 private:
  enum class Refusal { none, not_main_thread, another_inside };
  /// Takes the turn where the level allows; `level` and `other` describe a refusal.
  Refusal take(const char* call, int& level, const char*& other) noexcept;

  bool held_ = false;
  bool refused_ = false;
};

}  // namespace capi
}  // namespace rfa
