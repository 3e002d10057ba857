#include "vfs/node.h"

#include <vector>

namespace sentry::vfs {

Node::~Node() {
  std::vector<NodeRef> pending;
  auto take_children = [&pending](Node& n) {
    for (auto& [name, child] : n.children) pending.push_back(std::move(child));
    n.children.clear();
  };
  take_children(*this);
  while (!pending.empty()) {
    NodeRef n = std::move(pending.back());
    pending.pop_back();
    // The last holder: empty it first, so that its release does not recurse.
    if (n && n.use_count() == 1) take_children(*n);
  }
}

}  // namespace sentry::vfs
