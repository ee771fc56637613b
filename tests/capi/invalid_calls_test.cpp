// SPDX-License-Identifier: BSD-3-Clause
// Bad input through the C API: every call below is invalid, and each must return the right
// code with a message that tells the user what to fix. None may crash or hang, on any rank.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"
#include "scoped_env.hpp"

namespace {

using namespace rfa_capi_test;
using rfa::test::ScopedEnv;

rfa_options_t valid_options() { return small_problem(RFA_LAYOUT_CONTIGUOUS, 4); }

// Every rank makes the same invalid creation; every rank must fail with the code and message.
void expect_create_fails(const rfa_options_t& o, rfa_result_t code, const char* fragment) {
  rfa_context_t ctx = reinterpret_cast<rfa_context_t>(&ctx);  // not NULL: must be cleared
  EXPECT_RFA_FAILS(code, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), fragment);
  EXPECT_EQ(ctx, nullptr) << "a failed create must leave the output NULL";
}

// ---------------------------------------------------------------- the last error message

// The message is the calling thread's (rfa.h): a thread starts with none, its failure does not
// replace another thread's message, and its success does not clear it.
TEST(CapiInvalid, LastErrorMessageIsPerThread) {
  std::int64_t local = 0;
  ASSERT_EQ(rfa_layout_local_seq(RFA_LAYOUT_CONTIGUOUS, -8, 2, &local), RFA_ERROR_INVALID_ARGUMENT);
  const std::string mine = rfa_get_last_error_message();
  ASSERT_NE(mine.find("-8"), std::string::npos) << mine;
  std::string other_at_start, other_failed;
  rfa_result_t other_success = RFA_ERROR_INTERNAL;
  std::thread other([&] {
    other_at_start = rfa_get_last_error_message();
    std::int64_t l = 0;
    if (rfa_layout_local_seq(RFA_LAYOUT_ZIGZAG, 12, 4, &l) != RFA_SUCCESS) other_failed = rfa_get_last_error_message();
    other_success = rfa_layout_local_seq(RFA_LAYOUT_CONTIGUOUS, 8, 2, &l);
  });
  other.join();
  EXPECT_EQ(other_at_start, "");
  EXPECT_NE(other_failed.find("12"), std::string::npos) << other_failed;
  EXPECT_EQ(other_success, RFA_SUCCESS);
  EXPECT_EQ(std::string(rfa_get_last_error_message()), mine);
}

// ---------------------------------------------------------------- options and creation

TEST(CapiInvalid, OptionsInitNull) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_options_init(nullptr), "options is NULL");
}

TEST(CapiInvalid, OptionsInitSizeTooSmall) {
  rfa_options_t o;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_options_init_sized(&o, 4), "struct_size is 4");
}

TEST(CapiInvalid, CreateNullOptions) {
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, nullptr, &ctx), "options is NULL");
}

TEST(CapiInvalid, CreateNullOutput) {
  const rfa_options_t o = valid_options();
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, nullptr),
                   "output pointer) is NULL");
}

TEST(CapiInvalid, CreateUninitializedOptions) {
  rfa_options_t o;
  std::memset(&o, 0, sizeof o);  // forgot rfa_options_init
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "rfa_options_init");
}

TEST(CapiInvalid, CreateZeroVersion) {
  rfa_options_t o = valid_options();
  o.version = 0;
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "version is 0");
}

// The handle starts as garbage: a failure, the earliest included, leaves it NULL.
rfa_context_t garbage_handle() { return reinterpret_cast<rfa_context_t>(std::uintptr_t(1)); }

TEST(CapiInvalid, CreateCommNull) {
  const rfa_options_t o = valid_options();
  rfa_context_t ctx = garbage_handle();
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_NULL, &o, &ctx), "MPI_COMM_NULL");
  EXPECT_EQ(ctx, nullptr);
}

TEST(CapiInvalid, CreateFintCommNull) {
  const rfa_options_t o = valid_options();
  rfa_context_t ctx = garbage_handle();
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create_fint(MPI_Comm_c2f(MPI_COMM_NULL), &o, &ctx),
                   "MPI_COMM_NULL");
  EXPECT_EQ(ctx, nullptr);
}

// A Fortran integer that names no communicator (on every rank) is refused with a message, not
// handed to MPI, whose error handler on MPI_COMM_WORLD would end the job; a communicator the
// program made (not a predefined one) is taken. MPI can tell the first only where its handles
// are pointers (Open MPI): elsewhere the integer is the handle.
TEST(CapiInvalid, CreateFintNoCommunicator) {
  const rfa_options_t o = valid_options();
  MPI_Comm made = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_split(MPI_COMM_WORLD, 0, world_rank(), &made), MPI_SUCCESS);
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create_fint(MPI_Comm_c2f(made), &o, &ctx));
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
  MPI_Comm_free(&made);
  if (!std::is_pointer<MPI_Comm>::value) GTEST_SKIP() << "MPI's handles are integers: it cannot tell a bad one";
  for (const MPI_Fint bogus : {MPI_Fint(12345), MPI_Fint(-1)}) {
    SCOPED_TRACE(bogus);
    rfa_context_t ctx = garbage_handle();
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create_fint(bogus, &o, &ctx), "is not a communicator");
    EXPECT_EQ(ctx, nullptr);
  }
}

// An intercommunicator between two groups of ranks (even and odd world ranks): its collectives
// reach the other group, so creation is refused on every rank of both, at once.
TEST(CapiInvalid, CreateIntercommunicator) {
  if (world_size() < 2) GTEST_SKIP() << "an intercommunicator needs two groups";
  const int rank = world_rank();
  MPI_Comm group = MPI_COMM_NULL, inter = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &group);
  MPI_Intercomm_create(group, 0, MPI_COMM_WORLD, rank % 2 == 0 ? 1 : 0, 77, &inter);
  rfa_options_t o = valid_options();
  o.timeout_s = 30;  // a rank left waiting in a collective ends here
  rfa_context_t ctx = garbage_handle();
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(inter, &o, &ctx), "intercommunicator");
  EXPECT_EQ(ctx, nullptr);
  ctx = garbage_handle();
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create_fint(MPI_Comm_c2f(inter), &o, &ctx),
                   "intercommunicator");
  EXPECT_EQ(ctx, nullptr);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&group);
  // The world is still usable for the next collective.
  ASSERT_EQ(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
}

// A switch the library reads for itself (0 or 1) given another word on one rank: `off` would
// read as on. Refused on every rank, naming it; 0 and 1 are taken.
TEST(CapiInvalid, ASwitchThatIsNeitherZeroNorOneIsRefusedEverywhere) {
  const int last = world_size() - 1;
  for (const char* name : {"RFA_HOST_AMX", "RFA_HOST_BF16_DOT", "RFA_MPI_CUDA_AWARE"}) {
    if (world_rank() == last) setenv(name, "off", 1);
    const rfa_options_t o = valid_options();
    rfa_context_t ctx = garbage_handle();
    const std::string says = world_rank() == last ? std::string(name) + " is 'off'" : "rank(s) " + std::to_string(last);
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), says.c_str());
    EXPECT_EQ(ctx, nullptr);
    for (const char* fine : {"0", "1"}) {
      setenv(name, fine, 1);
      ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
      ASSERT_RFA_OK(rfa_context_destroy(ctx));
    }
    unsetenv(name);
  }
}

// RFA_TRANSPORT chooses a device transport: a host context moves host memory over MPI whatever
// it names, but a value that is no transport, or one set differently on some rank, is refused
// there too, on every rank.
TEST(CapiInvalid, TheTransportVariableIsCheckedOnHostContextsToo) {
  const rfa_options_t o = valid_options();
  rfa_context_t ctx = garbage_handle();
  setenv("RFA_TRANSPORT", "bogus", 1);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                   "RFA_TRANSPORT is 'bogus'");
  EXPECT_EQ(ctx, nullptr);
  if (world_size() > 1) {
    setenv("RFA_TRANSPORT", world_rank() == 0 ? "mpi" : "nccl", 1);
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                     "RFA_TRANSPORT differs between ranks");
    EXPECT_EQ(ctx, nullptr);
  }
  setenv("RFA_TRANSPORT", "nccl", 1);  // a device transport: a host context still runs over MPI
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
  unsetenv("RFA_TRANSPORT");
}

// RFA_CHECK_VALUES and RFA_CUDA_KERNELS become options before the ranks compare them: set
// differently on one rank, every rank refuses, naming the variable (a host context too, where
// the CUDA kernels' choice is unused).
TEST(CapiInvalid, SwitchVariablesThatDifferBetweenRanksAreRefused) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const rfa_options_t o = valid_options();
  struct Case {
    const char* variable;
    const char* rank0;
    const char* others;
    const char* option;
  };
  for (const Case& c :
       {Case{"RFA_CHECK_VALUES", "1", "0", "ranks disagree on options.check_values (after RFA_CHECK_VALUES)"},
        Case{"RFA_CUDA_KERNELS", "rfa", "auto", "ranks disagree on options.cuda_kernels (after RFA_CUDA_KERNELS)"}}) {
    SCOPED_TRACE(c.variable);
    rfa_context_t ctx = garbage_handle();
    {
      const ScopedEnv differing(c.variable, world_rank() == 0 ? c.rank0 : c.others);
      EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), c.option);
      EXPECT_EQ(ctx, nullptr);
    }
    const ScopedEnv alike(c.variable, c.others);  // the same everywhere: created
    ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
    ASSERT_RFA_OK(rfa_context_destroy(ctx));
  }
}

TEST(CapiInvalid, UnknownLayout) {
  rfa_options_t o = valid_options();
  o.layout = rfa_layout_t(7);
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "options.layout is 7");
}

TEST(CapiInvalid, UnknownMask) {
  rfa_options_t o = valid_options();
  o.mask = rfa_mask_t(5);
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "options.mask is 5");
}

TEST(CapiInvalid, UnknownDtype) {
  rfa_options_t o = valid_options();
  o.dtype = rfa_dtype_t(9);
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "options.dtype is 9");
}

TEST(CapiInvalid, UnknownRingOrder) {
  rfa_options_t o = valid_options();
  o.ring_order = rfa_ring_order_t(42);
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "options.ring_order is 42");
}

TEST(CapiInvalid, NanSoftmaxScale) {
  rfa_options_t o = valid_options();
  o.softmax_scale = std::numeric_limits<double>::quiet_NaN();
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "softmax_scale");
}

TEST(CapiInvalid, NegativeSoftmaxScale) {
  rfa_options_t o = valid_options();
  o.softmax_scale = -0.5;
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "softmax_scale is -0.5");
}

TEST(CapiInvalid, ZeroBatch) {
  rfa_options_t o = valid_options();
  o.batch = 0;
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "options.batch is 0");
}

TEST(CapiInvalid, SeqTotalLeftAtDefault) {
  rfa_options_t o = valid_options();
  o.seq_total = 0;
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "options.seq_total is 0");
}

TEST(CapiInvalid, NegativeSeqTotal) {
  rfa_options_t o = valid_options();
  o.seq_total = -5;
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "options.seq_total is -5");
}

TEST(CapiInvalid, ZeroHeads) {
  rfa_options_t o = valid_options();
  o.heads = 0;
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "options.heads is 0");
}

TEST(CapiInvalid, ZeroKvHeads) {
  rfa_options_t o = valid_options();
  o.kv_heads = 0;
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "options.kv_heads is 0");
}

TEST(CapiInvalid, HeadsNotMultipleOfKvHeads) {
  rfa_options_t o = valid_options();
  o.heads = 6;
  o.kv_heads = 4;
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "options.heads (6) is not a multiple of options.kv_heads (4)");
}

TEST(CapiInvalid, ZeroHeadDim) {
  rfa_options_t o = valid_options();
  o.head_dim = 0;
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "options.head_dim is 0");
}

TEST(CapiInvalid, HeadDimNotMultipleOf8) {
  rfa_options_t o = valid_options();
  o.head_dim = 12;
  expect_create_fails(o, RFA_ERROR_UNSUPPORTED, "head_dim 12 is not supported");
}

TEST(CapiInvalid, HeadDimTooLarge) {
  rfa_options_t o = valid_options();
  o.head_dim = 512;
  expect_create_fails(o, RFA_ERROR_UNSUPPORTED, "head_dim 512 is not supported");
}

TEST(CapiInvalid, SequenceNotDivisibleForZigzag) {
  rfa_options_t o = valid_options();
  o.layout = RFA_LAYOUT_ZIGZAG;
  o.seq_total = 2 * world_size() + 1;  // odd: never a multiple of 2P
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "zigzag layout needs");
}

TEST(CapiInvalid, UnknownStrategy) {
  rfa_options_t o = valid_options();
  o.strategy = rfa_strategy_t(9);
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "options.strategy is 9");
}

TEST(CapiInvalid, UlyssesDegreeWithTheRing) {
  rfa_options_t o = valid_options();
  o.ulysses_degree = 2;
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "ulysses_degree is 2 but the ring strategy has no Ulysses groups");
}

TEST(CapiInvalid, UlyssesHeadsNotDivisibleByTheRanks) {
  if (world_size() < 2) GTEST_SKIP() << "every head count divides by 1";
  rfa_options_t o = valid_options();
  o.strategy = RFA_STRATEGY_ULYSSES;
  o.heads = world_size() + 1;
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "is not a multiple of the Ulysses degree");
}

TEST(CapiInvalid, UlyssesDegreeOtherThanTheRanks) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  rfa_options_t o = valid_options();
  o.strategy = RFA_STRATEGY_ULYSSES;
  o.ulysses_degree = 1;
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "choose the hybrid strategy");
}

TEST(CapiInvalid, HybridWithoutADegree) {
  rfa_options_t o = valid_options();
  o.strategy = RFA_STRATEGY_HYBRID;
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "ulysses_degree is 0 but the hybrid strategy needs");
}

TEST(CapiInvalid, HybridDegreeNotDividingTheHeads) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  rfa_options_t o = valid_options();
  o.strategy = RFA_STRATEGY_HYBRID;
  o.ulysses_degree = world_size();
  o.heads = 2 * world_size() + 1;
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "is not a multiple of the Ulysses degree");
}

// ---------------------------------------------------------------- ranks that disagree

TEST(CapiInvalid, RanksDisagreeOnStrategy) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  rfa_options_t o = valid_options();
  if (world_rank() == 1) o.strategy = RFA_STRATEGY_ALLGATHER;
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "options.strategy",
                   "rank 0 passes 0", "rank 1 passes 2");
  EXPECT_EQ(ctx, nullptr);
}

TEST(CapiInvalid, RanksDisagreeOnHeads) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  rfa_options_t o = valid_options();
  if (world_rank() == 1) o.heads = 4;
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "options.heads",
                   "rank 0 passes 2", "rank 1 passes 4", "rank(s) 1)");
  EXPECT_EQ(ctx, nullptr);
}

TEST(CapiInvalid, RanksDisagreeOnSoftmaxScale) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  rfa_options_t o = valid_options();
  if (world_rank() == world_size() - 1) o.softmax_scale = 0.25;
  rfa_context_t ctx = nullptr;
  const std::string last = std::to_string(world_size() - 1);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "options.softmax_scale",
                   ("rank " + last + " passes 0.25").c_str());
}

TEST(CapiInvalid, RanksDisagreeOnDocumentBoundaries) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  rfa_options_t o = valid_options();
  const std::vector<int64_t> bounds = {0, world_rank() == 1 ? 1 : 2, o.seq_total};
  o.doc_boundaries = bounds.data();
  o.doc_boundary_count = int64_t(bounds.size());
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "options.doc_boundaries",
                   "rank 1 passes a list hashing to", "rank(s) 1)");
  EXPECT_EQ(ctx, nullptr);
}

// CUDA contexts take documents and windows (the device mask is the host kernels' rule); their
// boundaries are checked as on the host, before the device is looked at, in every build.
TEST(CapiInvalid, DocumentsOnCudaAreCheckedLikeOnTheHost) {
  rfa_options_t o = valid_options();
  o.device = RFA_DEVICE_CUDA;
  o.dtype = RFA_DTYPE_BFLOAT16;
  o.head_dim = 64;
  o.window = 3;
  const std::vector<int64_t> bounds = {0, 5, 4, o.seq_total};
  o.doc_boundaries = bounds.data();
  o.doc_boundary_count = int64_t(bounds.size());
  expect_create_fails(o, RFA_ERROR_INVALID_ARGUMENT, "decrease");
}

TEST(CapiInvalid, OneRankPassesNullOptions) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const rfa_options_t o = valid_options();
  rfa_context_t ctx = nullptr;
  const rfa_result_t rc = rfa_context_create(MPI_COMM_WORLD, world_rank() == 1 ? nullptr : &o, &ctx);
  if (world_rank() == 1) {
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rc, "options is NULL");
  } else {
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rc, "rank(s) 1 of the communicator");
  }
  EXPECT_EQ(ctx, nullptr);
}

// Many invalid options, one row each: every rank creates with the same bad value and every
// rank must fail with the code and a message naming what to change.
struct BadOption {
  const char* name;
  void (*spoil)(rfa_options_t&);
  rfa_result_t code;
  const char* fragment;
};

const BadOption kBadOptions[] = {
    {"layout 4", [](rfa_options_t& o) { o.layout = rfa_layout_t(4); }, RFA_ERROR_INVALID_ARGUMENT, "options.layout"},
    {"layout minus 1", [](rfa_options_t& o) { o.layout = rfa_layout_t(-1); }, RFA_ERROR_INVALID_ARGUMENT,
     "options.layout"},
    {"mask 3", [](rfa_options_t& o) { o.mask = rfa_mask_t(3); }, RFA_ERROR_INVALID_ARGUMENT, "options.mask"},
    {"mask minus 1", [](rfa_options_t& o) { o.mask = rfa_mask_t(-1); }, RFA_ERROR_INVALID_ARGUMENT, "options.mask"},
    {"dtype 3", [](rfa_options_t& o) { o.dtype = rfa_dtype_t(3); }, RFA_ERROR_INVALID_ARGUMENT, "options.dtype"},
    {"dtype minus 1", [](rfa_options_t& o) { o.dtype = rfa_dtype_t(-1); }, RFA_ERROR_INVALID_ARGUMENT, "options.dtype"},
    {"ring_order 4", [](rfa_options_t& o) { o.ring_order = rfa_ring_order_t(4); }, RFA_ERROR_INVALID_ARGUMENT,
     "options.ring_order"},
    {"ring_order minus 1", [](rfa_options_t& o) { o.ring_order = rfa_ring_order_t(-1); }, RFA_ERROR_INVALID_ARGUMENT,
     "options.ring_order"},
    {"device 2", [](rfa_options_t& o) { o.device = rfa_device_t(2); }, RFA_ERROR_INVALID_ARGUMENT, "options.device"},
    {"device minus 1", [](rfa_options_t& o) { o.device = rfa_device_t(-1); }, RFA_ERROR_INVALID_ARGUMENT,
     "options.device"},
    {"transport 3", [](rfa_options_t& o) { o.transport = rfa_transport_t(3); }, RFA_ERROR_INVALID_ARGUMENT,
     "options.transport"},
    {"transport minus 1", [](rfa_options_t& o) { o.transport = rfa_transport_t(-1); }, RFA_ERROR_INVALID_ARGUMENT,
     "options.transport"},
    {"NCCL on the host", [](rfa_options_t& o) { o.transport = RFA_TRANSPORT_NCCL; }, RFA_ERROR_UNSUPPORTED,
     "NCCL moves device memory only"},
    {"softmax_scale plus inf", [](rfa_options_t& o) { o.softmax_scale = std::numeric_limits<double>::infinity(); },
     RFA_ERROR_INVALID_ARGUMENT, "softmax_scale"},
    {"softmax_scale minus inf", [](rfa_options_t& o) { o.softmax_scale = -std::numeric_limits<double>::infinity(); },
     RFA_ERROR_INVALID_ARGUMENT, "softmax_scale"},
    {"softmax_scale below fp32", [](rfa_options_t& o) { o.softmax_scale = 1e-300; }, RFA_ERROR_INVALID_ARGUMENT,
     "below the range of fp32"},
    {"softmax_scale beyond fp32", [](rfa_options_t& o) { o.softmax_scale = 1e300; }, RFA_ERROR_INVALID_ARGUMENT,
     "beyond the range of fp32"},
    {"check_values 3", [](rfa_options_t& o) { o.check_values = rfa_value_checks_t(3); }, RFA_ERROR_INVALID_ARGUMENT,
     "options.check_values is 3"},
    {"timeout_s plus inf", [](rfa_options_t& o) { o.timeout_s = std::numeric_limits<double>::infinity(); },
     RFA_ERROR_INVALID_ARGUMENT, "timeout_s"},
    {"timeout_s minus inf", [](rfa_options_t& o) { o.timeout_s = -std::numeric_limits<double>::infinity(); },
     RFA_ERROR_INVALID_ARGUMENT, "timeout_s"},
    {"batch minus 1", [](rfa_options_t& o) { o.batch = -1; }, RFA_ERROR_INVALID_ARGUMENT, "options.batch"},
    {"heads minus 1", [](rfa_options_t& o) { o.heads = -1; }, RFA_ERROR_INVALID_ARGUMENT, "options.heads"},
    {"kv_heads minus 1", [](rfa_options_t& o) { o.kv_heads = -1; }, RFA_ERROR_INVALID_ARGUMENT, "kv_heads"},
    {"kv_heads > heads", [](rfa_options_t& o) { o.kv_heads = 4; }, RFA_ERROR_INVALID_ARGUMENT, "kv_heads"},
    {"head_dim minus 8", [](rfa_options_t& o) { o.head_dim = -8; }, RFA_ERROR_INVALID_ARGUMENT, "head_dim"},
    {"head_dim 7", [](rfa_options_t& o) { o.head_dim = 7; }, RFA_ERROR_UNSUPPORTED, "head_dim 7"},
    {"head_dim 264", [](rfa_options_t& o) { o.head_dim = 264; }, RFA_ERROR_UNSUPPORTED, "head_dim 264"},
    {"seq_total INT64_MAX", [](rfa_options_t& o) { o.seq_total = std::numeric_limits<int64_t>::max(); },
     RFA_ERROR_INVALID_ARGUMENT, "overflow"},
    {"batch x seq x heads x d overflows",
     [](rfa_options_t& o) {
       o.batch = int64_t(1) << 40;
       o.seq_total = int64_t(1) << 20;
     },
     RFA_ERROR_INVALID_ARGUMENT, "overflow"},
    {"heads x d overflows", [](rfa_options_t& o) { o.heads = o.kv_heads = int64_t(1) << 58; },
     RFA_ERROR_INVALID_ARGUMENT, "overflow"},
    {"strategy 6", [](rfa_options_t& o) { o.strategy = rfa_strategy_t(6); }, RFA_ERROR_INVALID_ARGUMENT, "strategy"},
    {"strategy minus 1", [](rfa_options_t& o) { o.strategy = rfa_strategy_t(-1); }, RFA_ERROR_INVALID_ARGUMENT,
     "strategy"},
    {"ulysses_degree minus 1, hybrid",
     [](rfa_options_t& o) {
       o.strategy = RFA_STRATEGY_HYBRID;
       o.ulysses_degree = -1;
     },
     RFA_ERROR_INVALID_ARGUMENT, "ulysses_degree"},
    {"ulysses_degree minus 1, ring", [](rfa_options_t& o) { o.ulysses_degree = -1; }, RFA_ERROR_INVALID_ARGUMENT,
     "ulysses_degree"},
    {"batch INT64_MIN", [](rfa_options_t& o) { o.batch = std::numeric_limits<int64_t>::min(); },
     RFA_ERROR_INVALID_ARGUMENT, "options.batch"},
    {"heads INT64_MAX", [](rfa_options_t& o) { o.heads = std::numeric_limits<int64_t>::max(); },
     RFA_ERROR_INVALID_ARGUMENT, "overflow"},
    {"kv_heads INT64_MAX", [](rfa_options_t& o) { o.kv_heads = std::numeric_limits<int64_t>::max(); },
     RFA_ERROR_INVALID_ARGUMENT, "kv_heads"},
    {"head_dim INT64_MAX", [](rfa_options_t& o) { o.head_dim = std::numeric_limits<int64_t>::max(); },
     RFA_ERROR_INVALID_ARGUMENT, "overflow"},
    {"softmax_scale minus tiny", [](rfa_options_t& o) { o.softmax_scale = -1e-30; }, RFA_ERROR_INVALID_ARGUMENT,
     "softmax_scale"},
    {"softmax_scale beyond float", [](rfa_options_t& o) { o.softmax_scale = 1e300; }, RFA_ERROR_INVALID_ARGUMENT,
     "softmax_scale"},
    {"timeout_s NaN", [](rfa_options_t& o) { o.timeout_s = std::numeric_limits<double>::quiet_NaN(); },
     RFA_ERROR_INVALID_ARGUMENT, "timeout_s"},
    {"window minus 1", [](rfa_options_t& o) { o.window = -1; }, RFA_ERROR_INVALID_ARGUMENT, "options.window is -1"},
    {"doc_boundary_count minus 1", [](rfa_options_t& o) { o.doc_boundary_count = -1; }, RFA_ERROR_INVALID_ARGUMENT,
     "options->doc_boundary_count is -1"},
    {"doc_boundaries NULL with a count", [](rfa_options_t& o) { o.doc_boundary_count = 3; }, RFA_ERROR_INVALID_ARGUMENT,
     "options.doc_boundaries is NULL but its count is 3"},
    {"doc_boundaries of one value",
     [](rfa_options_t& o) {
       static const int64_t zero[] = {0};
       o.doc_boundaries = zero;
       o.doc_boundary_count = 1;
     },
     RFA_ERROR_INVALID_ARGUMENT, "needs documents + 1 cumulative boundaries"},
    {"doc_boundaries not from 0",
     [](rfa_options_t& o) {
       static int64_t b[2];
       b[0] = 1;
       b[1] = o.seq_total;
       o.doc_boundaries = b;
       o.doc_boundary_count = 2;
     },
     RFA_ERROR_INVALID_ARGUMENT, "options.doc_boundaries[0] is 1; the first boundary must be 0"},
    {"doc_boundaries decreasing",
     [](rfa_options_t& o) {
       static int64_t b[4];
       b[0] = 0;
       b[1] = 3;
       b[2] = 2;
       b[3] = o.seq_total;
       o.doc_boundaries = b;
       o.doc_boundary_count = 4;
     },
     RFA_ERROR_INVALID_ARGUMENT, "options.doc_boundaries[2] = 2 is smaller than options.doc_boundaries[1] = 3"},
    {"doc_boundaries short of seq_total",
     [](rfa_options_t& o) {
       static int64_t b[3];
       b[0] = 0;
       b[1] = 2;
       b[2] = o.seq_total - 1;
       o.doc_boundaries = b;
       o.doc_boundary_count = 3;
     },
     RFA_ERROR_INVALID_ARGUMENT, "the last boundary must be seq_total"},
    {"doc_boundaries past seq_total",
     [](rfa_options_t& o) {
       static int64_t b[2];
       b[0] = 0;
       b[1] = o.seq_total + 1;
       o.doc_boundaries = b;
       o.doc_boundary_count = 2;
     },
     RFA_ERROR_INVALID_ARGUMENT, "the last boundary must be seq_total"},
    {"transport 99", [](rfa_options_t& o) { o.transport = rfa_transport_t(99); }, RFA_ERROR_INVALID_ARGUMENT,
     "options.transport"},
    {"CUDA context, fp32", [](rfa_options_t& o) { o.device = RFA_DEVICE_CUDA; }, RFA_ERROR_UNSUPPORTED, "CUDA"},
    {"CUDA context, head_dim 8",
     [](rfa_options_t& o) {
       o.device = RFA_DEVICE_CUDA;
       o.dtype = RFA_DTYPE_BFLOAT16;
     },
     RFA_ERROR_UNSUPPORTED, "32, 64, 128, 192 or 256"},
    {"CUDA context, head_dim 96",
     [](rfa_options_t& o) {
       o.device = RFA_DEVICE_CUDA;
       o.dtype = RFA_DTYPE_BFLOAT16;
       o.head_dim = 96;
     },
     RFA_ERROR_UNSUPPORTED,
     "head_dim 96 is not supported on CUDA devices: the CUDA kernels take head_dim 32, 64, 128, 192 or 256"},
#if !RFA_HAVE_CUDA
    // A build without the CUDA engine says so beside the kernels' limit.
    {"CUDA context, head_dim 96, in a build without CUDA",
     [](rfa_options_t& o) {
       o.device = RFA_DEVICE_CUDA;
       o.dtype = RFA_DTYPE_BFLOAT16;
       o.head_dim = 96;
     },
     RFA_ERROR_UNSUPPORTED, "; besides, this build of rfa cannot run on CUDA devices"},
#endif
    {"CUDA context, softcap over scale beyond fp32",
     [](rfa_options_t& o) {
       o.device = RFA_DEVICE_CUDA;
       o.dtype = RFA_DTYPE_BFLOAT16;
       o.head_dim = 64;
       o.softcap = 1e30;
       o.softmax_scale = 1e-10;
     },
     RFA_ERROR_UNSUPPORTED, "a soft cap of 1e+30 with a softmax scale of 1e-10 is not supported on CUDA devices"},
    // scale / softcap = 1e38: within fp32 (the host kernels take it), its inverse not.
    {"CUDA context, scale over softcap beyond fp32",
     [](rfa_options_t& o) {
       o.device = RFA_DEVICE_CUDA;
       o.dtype = RFA_DTYPE_BFLOAT16;
       o.head_dim = 64;
       o.softcap = 1e-28;
       o.softmax_scale = 1e10;
     },
     RFA_ERROR_UNSUPPORTED, "a soft cap of 1e-28 with a softmax scale of 1e+10 is not supported on CUDA devices"},
    // scale / softcap = 1e40: beyond fp32 on every device.
    {"scale over softcap beyond fp32 on any device",
     [](rfa_options_t& o) {
       o.softcap = 1e-30;
       o.softmax_scale = 1e10;
     },
     RFA_ERROR_INVALID_ARGUMENT, "softcap 1e-30 with softmax_scale 1e+10 is out of the kernels' range"},
    {"CUDA context, softcap over the default scale within fp32",  // 8e37, fp32: the dtype's check speaks
     [](rfa_options_t& o) {
       o.device = RFA_DEVICE_CUDA;
       o.head_dim = 64;
       o.softcap = 1e37;
     },
     RFA_ERROR_UNSUPPORTED, "dtype float32 is not supported on CUDA devices"},
};

class CapiInvalidOption : public ::testing::TestWithParam<BadOption> {};

TEST_P(CapiInvalidOption, FailsOnEveryRankWithAMessage) {
  rfa_options_t o = valid_options();
  GetParam().spoil(o);
  expect_create_fails(o, GetParam().code, GetParam().fragment);
}

INSTANTIATE_TEST_SUITE_P(Table, CapiInvalidOption, ::testing::ValuesIn(kBadOptions),
                         [](const ::testing::TestParamInfo<BadOption>& info) {
                           std::string name;
                           for (const char* c = info.param.name; *c; ++c)
                             name += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
                           return name;
                         });

// ---------------------------------------------------------------- calls on a context

class CapiInvalidOnContext : public ::testing::Test {
 protected:
  void SetUp() override {
    o_ = valid_options();
    ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o_, &ctx_));
    ASSERT_RFA_OK(rfa_context_get_local_seq(ctx_, &L_));
    q_.assign(std::size_t(L_ * o_.heads * o_.head_dim), 0.5f);
    k_.assign(std::size_t(L_ * o_.kv_heads * o_.head_dim), 0.25f);
    v_ = k_;
    out_.assign(q_.size(), 0.0f);
    lse_.assign(std::size_t(o_.heads * L_), 0.0f);
    dk_.assign(k_.size(), 0.0f);
    dv_.assign(k_.size(), 0.0f);
  }
  void TearDown() override { EXPECT_EQ(rfa_context_destroy(ctx_), RFA_SUCCESS); }

  rfa_options_t o_{};
  rfa_context_t ctx_ = nullptr;
  int64_t L_ = 0;
  std::vector<float> q_, k_, v_, out_, lse_, dk_, dv_;
};

TEST_F(CapiInvalidOnContext, ForwardNullContext) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_forward(nullptr, q_.data(), k_.data(), v_.data(), out_.data(), lse_.data()), "context is NULL");
}

TEST_F(CapiInvalidOnContext, ForwardNullQuery) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_forward(ctx_, nullptr, k_.data(), v_.data(), out_.data(), lse_.data()), "q is NULL");
}

TEST_F(CapiInvalidOnContext, ForwardNullLse) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_forward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), nullptr),
                   "lse is NULL");
}

TEST_F(CapiInvalidOnContext, ForwardOutputAliasesQuery) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_forward(ctx_, q_.data(), k_.data(), v_.data(), q_.data(), lse_.data()),
                   "the output out overlaps the input q");
}

TEST_F(CapiInvalidOnContext, ForwardLseInsideOutput) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_forward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), out_.data() + 1),
                   "the outputs out and lse overlap");
}

TEST_F(CapiInvalidOnContext, ForwardInputsMayAlias) {
  // Not an error: read-only inputs may share memory (k == v here).
  ASSERT_RFA_OK(rfa_forward(ctx_, q_.data(), k_.data(), k_.data(), out_.data(), lse_.data()));
  EXPECT_STREQ(rfa_get_last_error_message(), "") << "a successful call clears the message";
}

// Buffers carved back to back from one allocation touch without overlapping: taken, with the
// results of separate buffers. One element less between them, and they overlap.
TEST_F(CapiInvalidOnContext, BuffersBackToBackAreTakenAndOneElementCloserOverlap) {
  const std::size_t nq = q_.size(), nk = k_.size(), nl = lse_.size();
  std::vector<float> one(nq + 2 * nk + nq + nl + 1);  // one spare element for lse + 1 below
  float* const q = one.data();
  float* const k = q + nq;
  float* const v = k + nk;
  float* const out = v + nk;
  float* const lse = out + nq;
  std::copy(q_.begin(), q_.end(), q);
  std::copy(k_.begin(), k_.end(), k);
  std::copy(v_.begin(), v_.end(), v);
  ASSERT_RFA_OK(rfa_forward(ctx_, q, k, v, out, lse));
  ASSERT_RFA_OK(rfa_forward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), lse_.data()));
  EXPECT_TRUE(std::equal(out_.begin(), out_.end(), out)) << "back-to-back buffers changed the output";
  EXPECT_TRUE(std::equal(lse_.begin(), lse_.end(), lse)) << "back-to-back buffers changed lse";
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_forward(ctx_, q, k, v, out - 1, lse + 1),
                   "the output out overlaps the input v");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_forward(ctx_, q, k, v, out, lse - 1),
                   "the outputs out and lse overlap");
}

TEST_F(CapiInvalidOnContext, ForwardNullOnOneRankFailsEverywhere) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const bool culprit = world_rank() == 1;
  const rfa_result_t rc =
      rfa_forward(ctx_, q_.data(), k_.data(), culprit ? nullptr : v_.data(), out_.data(), lse_.data());
  if (culprit) {
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rc, "v is NULL");
  } else {
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rc, "lowest failing ring position: 1");
  }
}

TEST_F(CapiInvalidOnContext, BackwardGradientsAlias) {
  std::vector<float> dq(q_.size());
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_backward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), q_.data(), lse_.data(), dq.data(),
                                dk_.data(), dk_.data()),
                   "the outputs dk and dv overlap");
}

TEST_F(CapiInvalidOnContext, BackwardGradientOverwritesInput) {
  std::vector<float> dq(q_.size());
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_backward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), q_.data(), lse_.data(), dq.data(),
                                dk_.data(), v_.data()),
                   "the output dv overlaps the input v");
}

TEST_F(CapiInvalidOnContext, BackwardNullDout) {
  std::vector<float> dq(q_.size());
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_backward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), nullptr, lse_.data(), dq.data(),
                                dk_.data(), dv_.data()),
                   "dout is NULL");
}

TEST_F(CapiInvalidOnContext, GetPositionNullOutput) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_get_position(ctx_, nullptr), "position is NULL");
}

TEST_F(CapiInvalidOnContext, GetRanksNullContext) {
  int n = 0;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_get_ranks(nullptr, &n), "context is NULL");
}

TEST_F(CapiInvalidOnContext, LocalPositionsCapacityTooSmall) {
  std::vector<int64_t> pos(static_cast<std::size_t>(L_));
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_get_local_positions(ctx_, pos.data(), L_ - 1), "capacity is",
                   "holds");
}

TEST_F(CapiInvalidOnContext, GetOptionsUninitializedStruct) {
  rfa_options_t o;
  std::memset(&o, 0, sizeof o);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_get_options(ctx_, &o), "struct_size is 0");
}

TEST_F(CapiInvalidOnContext, ScatterZeroHeads) {
  std::vector<float> global(static_cast<std::size_t>(o_.seq_total * o_.heads * o_.head_dim));
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_scatter_bshd(ctx_, 0, global.data(), q_.data()), "heads is 0");
}

// A head count whose tensor no 64-bit size can hold: refused before any size is trusted.
TEST_F(CapiInvalidOnContext, ScatterAndGatherHeadsOverflowingTheSize) {
  const int64_t huge = int64_t(1) << 60;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_scatter_bshd(ctx_, huge, q_.data(), k_.data()), "overflows");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_gather_bshd(ctx_, huge, q_.data(), k_.data()), "overflows");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_allgather_bshd(ctx_, huge, q_.data(), k_.data()), "overflows");
  // The _dim forms: the head dim alone can overflow it too.
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_scatter_bshd_dim(ctx_, 1, huge, q_.data(), k_.data()), "overflows");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_gather_bshd_dim(ctx_, 1, huge, q_.data(), k_.data()), "overflows");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_allgather_bshd_dim(ctx_, 1, huge, q_.data(), k_.data()),
                   "overflows");
}

TEST_F(CapiInvalidOnContext, ScatterNullGlobal) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_scatter_bshd(ctx_, o_.heads, nullptr, q_.data()), "global is NULL");
}

TEST_F(CapiInvalidOnContext, GatherLseNullLocal) {
  std::vector<float> global(static_cast<std::size_t>(o_.heads * o_.seq_total));
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_gather_lse(ctx_, nullptr, global.data()), "local is NULL");
}

TEST_F(CapiInvalidOnContext, AllgatherNegativeHeadsFailsEverywhere) {
  std::vector<float> global(static_cast<std::size_t>(o_.seq_total * o_.heads * o_.head_dim));
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_allgather_bshd(ctx_, -1, q_.data(), global.data()), "heads is -1");
}

// A buffer one byte off its element's alignment: reading a float through it is undefined.
TEST_F(CapiInvalidOnContext, ForwardMisalignedQuery) {
  const void* q = reinterpret_cast<const char*>(q_.data()) + 1;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_forward(ctx_, q, k_.data(), v_.data(), out_.data(), lse_.data()),
                   "q (address", "is not aligned to its 4-byte elements");
}

TEST_F(CapiInvalidOnContext, ForwardMisalignedLse) {
  auto* lse = reinterpret_cast<float*>(reinterpret_cast<char*>(lse_.data()) + 2);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_forward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), lse),
                   "lse (address", "not aligned");
}

TEST_F(CapiInvalidOnContext, BackwardMisalignedDk) {
  std::vector<float> dq(q_.size());
  void* dk = reinterpret_cast<char*>(dk_.data()) + 3;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_backward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), q_.data(), lse_.data(), dq.data(),
                                dk, dv_.data()),
                   "dk (address", "not aligned");
}

TEST_F(CapiInvalidOnContext, ForwardNullKey) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_forward(ctx_, q_.data(), nullptr, v_.data(), out_.data(), lse_.data()), "k is NULL");
}

TEST_F(CapiInvalidOnContext, ForwardNullOutput) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_forward(ctx_, q_.data(), k_.data(), v_.data(), nullptr, lse_.data()),
                   "out is NULL");
}

TEST_F(CapiInvalidOnContext, ForwardOutputAliasesKey) {
  std::vector<float> big(q_.size() + k_.size());  // out's range starts inside k's
  std::copy(k_.begin(), k_.end(), big.begin());
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_forward(ctx_, q_.data(), big.data(), v_.data(), big.data() + 1, lse_.data()),
                   "the output out overlaps the input k");
}

TEST_F(CapiInvalidOnContext, ForwardLseOverwritesQuery) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_forward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), q_.data()),
                   "the output lse overlaps the input q");
}

TEST_F(CapiInvalidOnContext, BackwardNullDq) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_backward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), q_.data(), lse_.data(), nullptr,
                                dk_.data(), dv_.data()),
                   "dq is NULL");
}

TEST_F(CapiInvalidOnContext, BackwardNullLse) {
  std::vector<float> dq(q_.size());
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_backward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), q_.data(), nullptr, dq.data(),
                                dk_.data(), dv_.data()),
                   "lse is NULL");
}

TEST_F(CapiInvalidOnContext, BackwardDqOverwritesDout) {
  std::vector<float> dout(q_.size());
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_backward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), dout.data(), lse_.data(),
                                dout.data(), dk_.data(), dv_.data()),
                   "the output dq overlaps the input dout");
}

TEST_F(CapiInvalidOnContext, BackwardDkOverwritesQuery) {
  std::vector<float> dq(q_.size());
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_backward(ctx_, q_.data(), k_.data(), v_.data(), out_.data(), out_.data(), lse_.data(), dq.data(),
                                q_.data(), dv_.data()),
                   "the output dk overlaps the input q");
}

TEST_F(CapiInvalidOnContext, SetStreamOnAHostContext) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_set_stream(ctx_, nullptr),
                   "the context is RFA_DEVICE_HOST; only RFA_DEVICE_CUDA contexts take a CUDA stream");
}

TEST_F(CapiInvalidOnContext, ReleaseWorkspaceNullContext) {
  int64_t released = -1;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_release_workspace(nullptr, &released), "context is NULL");
  EXPECT_EQ(released, -1) << "a failed call wrote its output";
}

TEST_F(CapiInvalidOnContext, GetLocalSeqNullOutput) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_get_local_seq(ctx_, nullptr), "NULL");
}

TEST_F(CapiInvalidOnContext, GetOptionsNullOutput) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_get_options(ctx_, nullptr), "NULL");
}

TEST_F(CapiInvalidOnContext, LocalPositionsNullOutput) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_get_local_positions(ctx_, nullptr, L_), "NULL");
}

TEST_F(CapiInvalidOnContext, GatherBshdMisalignedLocal) {
  std::vector<float> global(static_cast<std::size_t>(o_.seq_total * o_.heads * o_.head_dim));
  const void* local = reinterpret_cast<const char*>(q_.data()) + 2;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_gather_bshd(ctx_, o_.heads, local, global.data()), "local (address",
                   "not aligned");
}

TEST_F(CapiInvalidOnContext, ScatterLseNullLocal) {
  std::vector<float> global(static_cast<std::size_t>(o_.heads * o_.seq_total));
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_scatter_lse(ctx_, global.data(), nullptr), "local is NULL");
}

TEST_F(CapiInvalidOnContext, GatherBshdLocalOverlapsGlobal) {
  std::vector<float> global(static_cast<std::size_t>(o_.seq_total * o_.heads * o_.head_dim));
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_gather_bshd(ctx_, o_.heads, global.data(), global.data()),
                   "the output global overlaps the input local");
}

// ---------------------------------------------------------------- context-free calls

TEST(CapiInvalid, LayoutLocalSeqNegativeSequence) {
  int64_t L = 0;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_layout_local_seq(RFA_LAYOUT_CONTIGUOUS, -8, 2, &L), "-8");
}

TEST(CapiInvalid, LayoutPositionsNullOutput) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_layout_positions(RFA_LAYOUT_ZIGZAG, 8, 2, 0, nullptr, 4), "NULL");
}

TEST(CapiInvalid, LayoutPositionsNegativePosition) {
  std::vector<int64_t> pos(8);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_layout_positions(RFA_LAYOUT_STRIPE, 8, 2, -1, pos.data(), 8),
                   "ring position -1 is outside 0..1");
}

TEST(CapiInvalid, LayoutLocalSeqUnknownLayout) {
  int64_t L = 0;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_layout_local_seq(rfa_layout_t(99), 8, 2, &L), "layout");
}

TEST(CapiInvalid, LayoutLocalSeqZeroRanks) {
  int64_t L = 0;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_layout_local_seq(RFA_LAYOUT_CONTIGUOUS, 8, 0, &L),
                   "number of ranks in the ring must be at least 1");
}

TEST(CapiInvalid, LayoutLocalSeqNullOutput) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_layout_local_seq(RFA_LAYOUT_CONTIGUOUS, 8, 2, nullptr),
                   "local_seq is NULL");
}

TEST(CapiInvalid, LayoutPositionsPositionOutOfRange) {
  std::vector<int64_t> pos(8);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_layout_positions(RFA_LAYOUT_STRIPE, 8, 2, 2, pos.data(), 8),
                   "ring position 2 is outside 0..1");
}

TEST(CapiInvalid, LayoutPositionsCapacityTooSmall) {
  std::vector<int64_t> pos(8);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_layout_positions(RFA_LAYOUT_ZIGZAG, 8, 2, 0, pos.data(), 3),
                   "capacity is 3", "holds 4");
}

TEST(CapiInvalid, HeaderLibraryMajorMismatch) {
  EXPECT_RFA_FAILS(RFA_ERROR_VERSION_MISMATCH, rfa_check_version_major(RFA_VERSION_MAJOR + 1), "major version",
                   RFA_VERSION_STRING);
  EXPECT_EQ(rfa_check_version(), RFA_SUCCESS);
}

TEST(CapiInvalid, UnknownResultCodeHasText) {
  EXPECT_STREQ(rfa_get_error_string(rfa_result_t(999)), "unknown rfa result code");
  EXPECT_STREQ(rfa_get_error_string(RFA_ERROR_INVALID_USAGE), "invalid usage (ranks disagree, or call out of order)");
}

TEST(CapiInvalid, DestroyNullIsANoOp) { EXPECT_EQ(rfa_context_destroy(nullptr), RFA_SUCCESS); }

// A handle that was destroyed, or never came from rfa_context_create, is refused by every call
// (with a message) instead of being dereferenced.
TEST(CapiInvalid, DestroyedAndMadeUpHandles) {
  rfa_options_t o;
  rfa_options_init(&o);
  o.seq_total = 2 * world_size() * 4;
  o.head_dim = 8;
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
  int64_t L = 0;
  int position = 0;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_get_local_seq(ctx, &L), "not a live rfa context");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_get_position(ctx, &position), "destroyed already");
  float buffer[8] = {0};
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_forward(ctx, buffer, buffer, buffer, buffer, buffer),
                   "not a live rfa context");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_destroy(ctx), "not a live rfa context");
  // Never created: any other address.
  alignas(16) static unsigned char not_a_context[256];
  rfa_context_t made_up = reinterpret_cast<rfa_context_t>(not_a_context);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_get_local_seq(made_up, &L), "never created");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_destroy(made_up), "never created");
}

// A copy of a destroyed handle stays refused after newer contexts are created, though the
// allocator hands them the destroyed context's memory: it reaches none of them, neither to read
// their options nor to destroy them.
TEST(CapiInvalid, DestroyedHandleNeverReachesANewerContext) {
  rfa_options_t o = valid_options();
  rfa_context_t old_handle = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &old_handle));
  ASSERT_RFA_OK(rfa_context_destroy(old_handle));
  o.heads = 2 * o.heads;
  std::vector<rfa_context_t> newer(4, nullptr);
  for (rfa_context_t& c : newer) ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &c));
  for (rfa_context_t c : newer) EXPECT_NE(c, old_handle);
  rfa_options_t seen;
  rfa_options_init(&seen);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_get_options(old_handle, &seen), "not a live rfa context");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_destroy(old_handle), "not a live rfa context");
  for (rfa_context_t c : newer) {
    ASSERT_RFA_OK(rfa_context_get_options(c, &seen));  // each still alive, with its own options
    EXPECT_EQ(seen.heads, o.heads);
    ASSERT_RFA_OK(rfa_context_destroy(c));
  }
}

// The test main initialized Kokkos, so rfa only borrows it: rfa_finalize must leave it alone.
TEST(CapiInvalid, FinalizeLeavesBorrowedKokkosAlone) {
  EXPECT_EQ(rfa_finalize(), RFA_SUCCESS);
  EXPECT_TRUE(Kokkos::is_initialized());
  rfa_options_t o = valid_options();
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));  // still usable afterwards
  EXPECT_EQ(rfa_context_destroy(ctx), RFA_SUCCESS);
}

}  // namespace
