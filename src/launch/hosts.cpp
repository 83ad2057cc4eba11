// Host lists, hostfiles, probes and the world-size choice of the launcher (see hosts.h).
#include "launch/hosts.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "launch/process.h"

namespace olmo::launch {

namespace {

int parse_slots(const std::string& s, const std::string& where) {
  size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(s, &used);
  } catch (...) {
    used = 0;
  }
  OLMO_CHECK(used == s.size() && !s.empty() && n >= 1 && n <= 4096, where, ": slot count '", s,
             "' is not an integer in 1..4096");
  return n;
}

Host parse_entry(const std::string& e, const std::string& where) {
  Host h;
  const size_t c = e.rfind(':');
  h.name = c == std::string::npos ? e : e.substr(0, c);
  if (c != std::string::npos) h.slots = parse_slots(e.substr(c + 1), cat(where, ": host '", e, "'"));
  OLMO_CHECK(!h.name.empty() && h.name.find_first_of(" \t,=") == std::string::npos, where,
             ": bad host name in '", e, "'");
  return h;
}

// Same host twice: slots added (mpirun would do the same).
void add_host(std::vector<Host>& out, const Host& h) {
  for (Host& o : out)
    if (o.name == h.name) {
      o.slots += h.slots;
      return;
    }
  out.push_back(h);
}

}  // namespace

std::vector<Host> parse_host_list(const std::string& list, const std::string& where) {
  std::vector<Host> out;
  std::stringstream ss(list);
  for (std::string e; std::getline(ss, e, ',');) {
    e.erase(0, e.find_first_not_of(" \t"));
    e.erase(e.find_last_not_of(" \t") + 1);
    OLMO_CHECK(!e.empty(), where, ": empty entry in host list '", list, "'");
    add_host(out, parse_entry(e, where));
  }
  OLMO_CHECK(!out.empty(), where, ": no hosts in '", list, "'");
  return out;
}

std::vector<Host> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  OLMO_CHECK(in, "hostfile ", path, ": cannot open");
  std::vector<Host> out;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    line = line.substr(0, line.find('#'));
    std::istringstream ls(line);
    std::string name, opt;
    if (!(ls >> name)) continue;
    const std::string where = cat("hostfile ", path, " line ", line_no);
    Host h = parse_entry(name, where);
    while (ls >> opt) {
      OLMO_CHECK(opt.rfind("slots=", 0) == 0, where, ": unknown field '", opt,
                 "' (expected: HOST slots=N)");
      h.slots = parse_slots(opt.substr(6), where);
    }
    add_host(out, h);
  }
  return out;
}

std::string host_list_string(const std::vector<Host>& hosts) {
  std::string s;
  for (const Host& h : hosts) s += cat(s.empty() ? "" : ",", h.name, ":", h.slots);
  return s;
}

int total_slots(const std::vector<Host>& hosts) {
  int n = 0;
  for (const Host& h : hosts) n += h.slots;
  return n;
}

bool is_local_host(const std::string& name) {
  if (name == "localhost" || name == "127.0.0.1") return true;
  char buf[256] = {0};
  return ::gethostname(buf, sizeof buf - 1) == 0 && name == buf;
}

Probe::Probe(const std::string& agent, std::string host, double timeout_s)
    : agent_(agent), host_(std::move(host)), timeout_s_(timeout_s) {
  if (is_local_host(host_)) return;
  std::vector<std::string> argv = split_words(agent_);
  argv.push_back(host_);
  argv.push_back("true");
  try {
    run_ = std::make_unique<CapturedRun>(argv, timeout_s);
  } catch (const Error& e) {
    why_ = e.what();
  }
}

Probe::~Probe() = default;

bool Probe::poll() {
  if (!run_) return true;
  if (!run_->poll()) return false;
  const ExitStatus& st = run_->status();
  if (run_->timed_out()) {
    why_ = cat("no answer from '", agent_, " ", host_, " true' within ", timeout_s_, " s");
  } else if (!st.ok()) {
    std::string out = run_->output();
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    const size_t nl = out.rfind('\n');
    if (nl != std::string::npos) out = out.substr(nl + 1);  // the last line says why
    why_ = cat("'", agent_, " ", host_, " true' failed (", st.describe(), ")",
               out.empty() ? std::string() : ": " + out);
  }
  run_.reset();
  return true;
}

std::string probe_host(const std::string& agent, const std::string& host, double timeout_s) {
  return probe_hosts(agent, {{host, 1}}, timeout_s)[0];
}

std::vector<std::string> probe_hosts(const std::string& agent, const std::vector<Host>& hosts,
                                     double timeout_s) {
  std::vector<std::unique_ptr<Probe>> probes;
  for (const Host& h : hosts) probes.push_back(std::make_unique<Probe>(agent, h.name, timeout_s));
  for (bool all = false; !all;) {
    all = true;
    for (auto& p : probes) all = p->poll() && all;
    if (!all) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::vector<std::string> why;
  for (auto& p : probes) why.push_back(p->why());
  return why;
}

int choose_world(int slots, int64_t micro_batches, int64_t instances) {
  for (int w = int(std::min<int64_t>(slots, instances)); w >= 1; --w)
    if (micro_batches == 0 || micro_batches % w == 0) return w;
  return 0;
}

std::vector<Host> take_slots(const std::vector<Host>& hosts, int world) {
  std::vector<Host> out;
  for (const Host& h : hosts) {
    if (world <= 0) break;
    out.push_back({h.name, std::min(h.slots, world)});
    world -= out.back().slots;
  }
  return out;
}

}  // namespace olmo::launch
