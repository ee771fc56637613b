// SPDX-License-Identifier: BSD-3-Clause
// Packed documents' boundary lists (core/documents.hpp): which lists are accepted, what the
// errors say, and the hash ranks compare the lists by.
#include "core/documents.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace rfa {
namespace {

// The error's code and whether its message holds `part`.
void expect_rejected(const std::vector<std::int64_t>& b, std::int64_t seq_total, const std::string& part) {
  try {
    validate_document_bounds(b.data(), std::int64_t(b.size()), seq_total, "bounds");
    ADD_FAILURE() << "accepted a list whose error would say: " << part;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(DocumentBounds, AcceptsCumulativeListsFromZeroToTheSequence) {
  validate_document_bounds(nullptr, 0, 100, "bounds");    // no documents
  const std::vector<std::int64_t> ok = {0, 10, 10, 100};  // an empty document is allowed
  validate_document_bounds(ok.data(), 4, 100, "bounds");
  validate_document_bounds(ok.data(), 4, -1, "bounds");  // end not checked
}

TEST(DocumentBounds, RejectsWhatIsNotAPartitionOfTheSequence) {
  expect_rejected({0}, 100, "needs documents + 1 cumulative boundaries");
  expect_rejected({5, 100}, 100, "bounds[0] is 5");
  expect_rejected({0, 60, 50, 100}, 100, "bounds[2] = 50 is smaller than bounds[1] = 60");
  expect_rejected({0, 50, 90}, 100, "must be seq_total (100)");
  try {
    validate_document_bounds(nullptr, 3, 100, "bounds");
    ADD_FAILURE() << "accepted a NULL list of 3 values";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is NULL but its count is 3"), std::string::npos) << e.what();
  }
}

TEST(DocumentBounds, HashTellsListsApartByEveryValueAndTheirOrder) {
  const std::vector<std::int64_t> a = {0, 10, 50, 100};
  const std::int64_t h = document_bounds_hash(a.data(), 4);
  EXPECT_EQ(h, document_bounds_hash(std::vector<std::int64_t>(a).data(), 4));  // values, not addresses
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::vector<std::int64_t> b = a;
    b[i] += 1;
    EXPECT_NE(document_bounds_hash(b.data(), 4), h) << "value " << i << " changed";
  }
  const std::vector<std::int64_t> swapped = {0, 50, 10, 100};
  EXPECT_NE(document_bounds_hash(swapped.data(), 4), h);
  EXPECT_NE(document_bounds_hash(a.data(), 3), h);  // a prefix
  EXPECT_EQ(document_bounds_hash(nullptr, 0), document_bounds_hash(a.data(), 0));
  EXPECT_NE(document_bounds_hash(nullptr, 0), h);
}

// validate_document_lists on `bounds` cut by `offsets` for `batch` entries of 100 tokens: the
// error's message must hold `part` (empty: accepted).
void expect_lists(const std::vector<std::int64_t>& bounds, const std::vector<std::int64_t>& offsets, std::int64_t batch,
                  const std::string& part) {
  try {
    validate_document_lists(bounds.data(), std::int64_t(bounds.size()), offsets.data(), std::int64_t(offsets.size()),
                            batch, 100, "bounds", "offsets");
    EXPECT_TRUE(part.empty()) << "accepted lists whose error would say: " << part;
  } catch (const Error& e) {
    EXPECT_FALSE(part.empty()) << "refused valid lists: " << e.what();
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(DocumentLists, AcceptsOneListPerEntryEachFromZeroToTheSequenceOrEmpty) {
  expect_lists({0, 10, 100, 0, 100, 0, 1, 99, 100}, {0, 3, 5, 9}, 3, "");
  expect_lists({0, 10, 100}, {0, 0, 3, 3}, 3, "");  // entries 0 and 2: one document
  expect_lists({}, {0, 0}, 1, "");
  expect_lists({0, 10, 100}, {}, 4, "");  // no offsets: one list for every entry
  expect_lists({0, 10, 90}, {}, 4, "must be seq_total (100)");
}

TEST(DocumentLists, RejectsOffsetsThatDoNotCutTheBoundariesIntoTheEntriesLists) {
  expect_lists({0, 100, 0, 100}, {0, 2, 4}, 3, "offsets has 3 value(s); per-sequence documents need batch + 1");
  // A batch not yet checked (the C API reads the lists before the shape): no overflow, a refusal.
  expect_lists({0, 100}, {0, 2}, std::numeric_limits<std::int64_t>::max(), "(batch is 9223372036854775807)");
  expect_lists({0, 100}, {0, 2}, -5, "(batch is -5)");
  expect_lists({0, 100, 0, 100}, {1, 2, 4}, 2, "offsets[0] is 1");
  expect_lists({0, 100, 0, 100}, {0, 3, 2, 4}, 3, "offsets[2] = 2 is smaller than offsets[1] = 3");
  // Falling at the last entry, with the last offset right: refused before entry 1's list reads
  // bounds[4], past the array.
  expect_lists({0, 100, 0, 100}, {0, 2, 5, 4}, 3, "offsets[3] = 4 is smaller than offsets[2] = 5");
  expect_lists({0, 100, 0, 100}, {0, 2, 3}, 2, "offsets[2] = 3 but the last offset must be bounds's count (4)");
  // Each entry's list is checked as a list of its own, named by its place.
  expect_lists({0, 100, 0, 50}, {0, 2, 4}, 2, "bounds[2 .. 4) (batch entry 1's list)[1] = 50");
  expect_lists({0, 100, 0}, {0, 2, 3}, 2, "batch entry 1's list) has 1 value(s)");
  expect_lists({0, 100, 5, 100}, {0, 2, 4}, 2, "(batch entry 1's list)[0] is 5");
  try {
    validate_document_lists(nullptr, 2, nullptr, 3, 2, 100, "bounds", "offsets");
    ADD_FAILURE() << "accepted NULL offsets";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("offsets is NULL but its count is 3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rfa
