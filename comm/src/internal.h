// Pieces shared by the MPI and NCCL Comms; private to prefixd_comm.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace prefixd::comm::internal {

// A duplicate of a caller's communicator, freed on destruction unless MPI is already finalised
// (Comms may outlive a failed MPI_Finalize path; freeing then would be an MPI error).
class OwnedMpiComm {
 public:
  OwnedMpiComm() = default;
  explicit OwnedMpiComm(MPI_Comm parent);  // MPI_Comm_dup + MPI_ERRORS_RETURN
  ~OwnedMpiComm();
  OwnedMpiComm(const OwnedMpiComm&) = delete;
  OwnedMpiComm& operator=(const OwnedMpiComm&) = delete;
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// Throws kInvalidArgument unless every vector has `size` entries.
void CheckAllToAllVArgs(int size, const std::vector<size_t>& send_bytes,
                        const std::vector<size_t>& send_offsets,
                        const std::vector<size_t>& recv_bytes,
                        const std::vector<size_t>& recv_offsets);

// Collective over `comm`: exchanges the byte counts and throws kInvalidArgument on EVERY rank
// (naming the first bad pair) when what rank j sends to rank i differs from what i expects from j.
// Throwing everywhere keeps a bad plan from leaving some ranks inside the exchange.
void CrossCheckAllToAllVSizes(MPI_Comm comm, const std::vector<size_t>& send_bytes,
                              const std::vector<size_t>& recv_bytes);

}  // namespace prefixd::comm::internal
