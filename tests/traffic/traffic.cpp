#include "tests/traffic/traffic.hpp"

#include <mpi.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace gradsync::traffic {

int world_rank_of(const Comm& comm, int rank) {
  MPI_Group group, world;
  MPI_Comm_group(comm.native(), &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int out = -1;
  MPI_Group_translate_ranks(group, 1, &rank, world, &out);
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return out;
}
namespace {

Recording* g_active = nullptr;

std::size_t bytes_of(int count, MPI_Datatype type) {
  int size = 0;
  PMPI_Type_size(type, &size);
  return static_cast<std::size_t>(count) * static_cast<std::size_t>(size);
}

// Ranks in tests are small; translating through the groups on every message is slow but exact for any communicator.
int world_rank_of(int rank, MPI_Comm comm) {
  if (rank == MPI_ANY_SOURCE || rank == MPI_PROC_NULL) return rank;
  MPI_Group group, world;
  PMPI_Comm_group(comm, &group);
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  int out = MPI_UNDEFINED;
  PMPI_Group_translate_ranks(group, 1, &rank, world, &out);
  PMPI_Group_free(&group);
  PMPI_Group_free(&world);
  return out;
}

void sent(const char* call, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  if (g_active && dest != MPI_PROC_NULL)
    g_active->sends.push_back({call, world_rank_of(dest, comm), tag, bytes_of(count, type)});
}

void received(const char* call, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm) {
  if (g_active && source != MPI_PROC_NULL)
    g_active->receives.push_back({call, world_rank_of(source, comm), tag, bytes_of(count, type)});
}

void collective(const char* call, int count, MPI_Datatype type) {
  if (g_active) g_active->collectives.push_back({call, count > 0 ? bytes_of(count, type) : 0});
}

std::vector<int> peers_of(const std::vector<Message>& messages) {
  std::set<int> peers;
  for (const Message& m : messages) peers.insert(m.peer);
  return {peers.begin(), peers.end()};
}

}  // namespace

Recording::Recording() {
  if (g_active) throw std::logic_error("traffic::Recording: one is already active in this process");
  g_active = this;
}

Recording::~Recording() { g_active = nullptr; }

std::size_t Recording::bytes_sent() const {
  std::size_t total = 0;
  for (const Message& m : sends) total += m.bytes;
  return total;
}

std::size_t Recording::bytes_sent_to(int peer) const {
  std::size_t total = 0;
  for (const Message& m : sends) total += m.peer == peer ? m.bytes : 0;
  return total;
}

std::size_t Recording::bytes_received_from(int peer) const {
  std::size_t total = 0;
  for (const Message& m : receives) total += m.peer == peer ? m.bytes : 0;
  return total;
}

std::vector<int> Recording::send_peers() const { return peers_of(sends); }
std::vector<int> Recording::receive_peers() const { return peers_of(receives); }

std::size_t Recording::collective_count(const std::string& call) const {
  return static_cast<std::size_t>(
      std::count_if(collectives.begin(), collectives.end(), [&](const Collective& c) { return c.call == call; }));
}

}  // namespace gradsync::traffic

// The interposed MPI entry points. Each records, then forwards to the PMPI_ name, which every MPI library provides.
using gradsync::traffic::collective;
using gradsync::traffic::received;
using gradsync::traffic::sent;

extern "C" {

int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  sent("MPI_Send", count, type, dest, tag, comm);
  return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  sent("MPI_Ssend", count, type, dest, tag, comm);
  return PMPI_Ssend(buf, count, type, dest, tag, comm);
}

int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  sent("MPI_Isend", count, type, dest, tag, comm);
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

int MPI_Issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  sent("MPI_Issend", count, type, dest, tag, comm);
  return PMPI_Issend(buf, count, type, dest, tag, comm, request);
}

int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  received("MPI_Recv", count, type, source, tag, comm);
  return PMPI_Recv(buf, count, type, source, tag, comm, status);
}

int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* request) {
  received("MPI_Irecv", count, type, source, tag, comm);
  return PMPI_Irecv(buf, count, type, source, tag, comm, request);
}

int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  sent("MPI_Sendrecv", sendcount, sendtype, dest, sendtag, comm);
  received("MPI_Sendrecv", recvcount, recvtype, source, recvtag, comm);
  return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm,
                       status);
}

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  collective("MPI_Allreduce", count, type);
  return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}

int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                   MPI_Request* request) {
  collective("MPI_Iallreduce", count, type);
  return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request);
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  collective("MPI_Reduce", count, type);
  return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  collective("MPI_Reduce_scatter_block", count, type);
  return PMPI_Reduce_scatter_block(sendbuf, recvbuf, count, type, op, comm);
}

int MPI_Bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  collective("MPI_Bcast", count, type);
  return PMPI_Bcast(buf, count, type, root, comm);
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  collective("MPI_Allgather", sendcount, sendtype);
  return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Barrier(MPI_Comm comm) {
  collective("MPI_Barrier", 0, MPI_BYTE);
  return PMPI_Barrier(comm);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  collective("MPI_Ibarrier", 0, MPI_BYTE);
  return PMPI_Ibarrier(comm, request);
}

}  // extern "C"
