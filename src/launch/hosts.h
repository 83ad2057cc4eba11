// Slots for the elastic launcher: host lists ("a:2,b:2"), OpenMPI-style hostfiles (re-read while
// a run goes on, so a resource manager or a person can add and remove slots), reachability
// probes through the remote shell mpirun will use, and the world size a set of slots allows.
// Contracts: a host name is a name or an IP address, slots >= 1; "localhost", "127.0.0.1" and
// this machine's host name are local (never probed). Bad input throws olmo::Error naming the
// list or file and the entry.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace olmo::launch {

class CapturedRun;

struct Host {
  std::string name;
  int slots = 1;
  bool operator==(const Host&) const = default;
};

// "a:2,b,c:4" (a host without :N has 1 slot). `where` names the source in errors.
std::vector<Host> parse_host_list(const std::string& list, const std::string& where);
// Lines "host slots=N", "host:N" or "host"; '#' starts a comment; blank lines ignored.
std::vector<Host> read_hostfile(const std::string& path);
// "a:2,b:1" (mpirun --host syntax).
std::string host_list_string(const std::vector<Host>& hosts);
int total_slots(const std::vector<Host>& hosts);
bool is_local_host(const std::string& name);

// A reachability probe: `agent HOST true` (agent: the remote shell command, split on spaces)
// within timeout_s, in the background (poll() never blocks). Local hosts answer at once.
class Probe {
 public:
  Probe(const std::string& agent, std::string host, double timeout_s);
  ~Probe();
  bool poll();                               // true once the answer is known
  const std::string& host() const { return host_; }
  const std::string& why() const { return why_; }  // "" = reachable, else why not

 private:
  std::string agent_, host_, why_;
  double timeout_s_;
  std::unique_ptr<CapturedRun> run_;
};
// Blocking: "" when the host answered, else why not (the agent's message or the timeout).
std::string probe_host(const std::string& agent, const std::string& host, double timeout_s);
// Blocking, all hosts probed side by side: why[i] for hosts[i].
std::vector<std::string> probe_hosts(const std::string& agent, const std::vector<Host>& hosts,
                                     double timeout_s);

// The largest world size W <= slots that is at most the instances of a global batch and, when
// micro_batches > 0 (dist.reduce=fast: every rank runs whole micro-batches, as many as the
// others), divides them; micro_batches 0 (dist.reduce=exact) allows any such W. 0 when none
// (slots < 1).
int choose_world(int slots, int64_t micro_batches, int64_t instances);
// The first `world` slots of hosts, in order (a host may be used partly).
std::vector<Host> take_slots(const std::vector<Host>& hosts, int world);

}  // namespace olmo::launch
