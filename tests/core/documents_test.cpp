// SPDX-License-Identifier: BSD-3-Clause
// Packed documents' boundary lists (core/documents.hpp): which lists are accepted, what the
// errors say, and the hash ranks compare the lists by.
#include "core/documents.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace rfa
