// SPDX-License-Identifier: BSD-3-Clause
#include "comm/mpi/byte_datatype.hpp"

#include "collective/mpi_error.hpp"
#include "core/error.hpp"

namespace rfa::comm::mpi {

namespace {
// Frees the intermediate types once the final one is committed (MPI keeps what it needs).
struct TypeGuard {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  ~TypeGuard() {
    if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
  }
};
}  // namespace

ByteDatatype::ByteDatatype(std::size_t bytes, std::size_t max_count) {
  require(max_count >= 1 && max_count <= std::size_t(INT_MAX), "ByteDatatype: max_count ", max_count,
          " is outside 1..INT_MAX");
  if (bytes <= max_count) {
    count_ = int(bytes);
    return;
  }
  const std::size_t blocks = bytes / max_count;
  const std::size_t remainder = bytes % max_count;
  require(blocks <= std::size_t(INT_MAX), "message of ", bytes, " bytes is too large for MPI");

  TypeGuard block, body, tail, joined;
  collective::check_mpi(MPI_Type_contiguous(int(max_count), MPI_BYTE, &block.type), "MPI_Type_contiguous");
  collective::check_mpi(MPI_Type_contiguous(int(blocks), block.type, &body.type), "MPI_Type_contiguous");
  MPI_Datatype whole = body.type;
  if (remainder > 0) {
    collective::check_mpi(MPI_Type_contiguous(int(remainder), MPI_BYTE, &tail.type), "MPI_Type_contiguous");
    int lengths[2] = {1, 1};
    MPI_Aint displacements[2] = {0, MPI_Aint(blocks * max_count)};
    MPI_Datatype parts[2] = {body.type, tail.type};
    collective::check_mpi(MPI_Type_create_struct(2, lengths, displacements, parts, &joined.type),
                          "MPI_Type_create_struct");
    whole = joined.type;
  }
  // An exact extent makes consecutive elements (allgather blocks) adjacent whatever
  // alignment padding the implementation would add to a struct type.
  collective::check_mpi(MPI_Type_create_resized(whole, 0, MPI_Aint(bytes), &type_), "MPI_Type_create_resized");
  owned_ = true;
  const int rc = MPI_Type_commit(&type_);
  if (rc != MPI_SUCCESS) {
    MPI_Type_free(&type_);
    collective::throw_mpi_error(rc, "MPI_Type_commit");
  }
  count_ = 1;
}

ByteDatatype::~ByteDatatype() {
  // Freeing a type is allowed while operations that use it are pending; after MPI_Finalize
  // nothing may be called.
  if (owned_ && collective::mpi_is_usable()) MPI_Type_free(&type_);
}

}  // namespace rfa::comm::mpi
