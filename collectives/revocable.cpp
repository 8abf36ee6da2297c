#include "collectives/revocable.hpp"

#include <mutex>
#include <vector>

#include "collectives/ulfm_ext.hpp"

namespace gradsync {
namespace {

// Weak, so tracking never keeps a communicator alive. Guarded: a progress thread may create a Comm while the main
// thread revokes.
struct Tracked {
  std::mutex mutex;
  std::vector<std::weak_ptr<MPI_Comm>> comms;
};
Tracked& tracked() {
  static Tracked t;
  return t;
}

}  // namespace

void track_for_revoke(const std::shared_ptr<MPI_Comm>& comm) {
  if (!GRADSYNC_HAVE_ULFM) return;
  Tracked& t = tracked();
  const std::lock_guard lock(t.mutex);
  std::erase_if(t.comms, [](const std::weak_ptr<MPI_Comm>& w) { return w.expired(); });
  t.comms.push_back(comm);
}

void for_each_revocable(const std::function<void(MPI_Comm)>& f) {
  f(MPI_COMM_WORLD);
  Tracked& t = tracked();
  const std::lock_guard lock(t.mutex);
  for (const std::weak_ptr<MPI_Comm>& w : t.comms)
    if (const std::shared_ptr<MPI_Comm> c = w.lock(); c && *c != MPI_COMM_NULL) f(*c);
}

}  // namespace gradsync
