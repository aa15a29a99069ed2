#pragma once
/// Certificate files for the connections between a cluster's nodes (CAF's TLS manager): all
/// three, or none. With them, every node proves who it is and checks its peers against the
/// authority; without them, the nodes talk plain TCP.

#include <string>

namespace conveyor {

struct tls_files {
  std::string certificate;  ///< this node's certificate (PEM)
  std::string key;          ///< its private key (PEM)
  std::string cafile;       ///< the authority that signed every node's certificate (PEM)
  bool enabled() const noexcept { return !certificate.empty(); }
};

}  // namespace conveyor
