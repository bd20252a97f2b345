// The persistent Python workers of cuda_triton (the design: docs/DECISIONS.md, "cuda_triton
// drives Triton through worker processes"). Each worker is `python3 -u -c <triton_worker.py>`
// with one end of a Unix socket pair on its fd 3; requests and replies are length-prefixed frames
// (triton_worker.py). A worker serves one request at a time; a pool of them compiles a graph's
// kernels in parallel. A Python exception is an ERR reply (a PluginError naming the kernel);
// a worker that dies (crash, signal, import failure) is a PluginError naming the kernel and the
// exit status, and is started again by the next request: never the end of the host process
// (sends use MSG_NOSIGNAL, so a dead peer is an error, not SIGPIPE).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace stax::triton {

struct WorkerOptions {
  std::string python = "python3";  // the interpreter (PATH lookup)
  bool interpret = false;          // TRITON_INTERPRET=1 in the workers' environment
  std::string workdir;             // where the workers write kernel modules (must exist)
};

// A request: "key=value" header lines and a body.
struct Request {
  std::string word;  // LOAD, COMPILE, RUN
  std::vector<std::pair<std::string, std::string>> fields;
  std::string body;
  void add(const std::string& k, const std::string& v) { fields.emplace_back(k, v); }
};

struct Reply {
  std::vector<std::pair<std::string, std::string>> fields;  // header lines of an OK reply
  std::string body;                                          // after the empty line
  std::string field(const std::string& k) const;             // "" when absent
};

class Worker {
 public:
  explicit Worker(WorkerOptions options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Sends a request and waits for its reply; starts the process first if it is not running.
  // `what` names the kernel in errors ("kernel 'kernel3'"). Throws PluginError: STAX_ERROR_COMPILE
  // for an ERR reply (the Python traceback), STAX_ERROR_RUNTIME when the worker died or could not
  // start. Callers serialise through lock().
  Reply call(const Request& r, const std::string& what);

  // Starts the process when it is not running (a no-op otherwise).
  void ensure_started(const std::string& what) {
    if (fd_ < 0) start(what);
  }
  // Incremented each time a process is started: modules loaded into an earlier one are gone.
  uint64_t generation() const { return generation_; }
  std::mutex& lock() { return mutex_; }
  const std::string& triton_version() const { return version_; }

 private:
  void start(const std::string& what);
  void stop();
  std::string died(const std::string& what);  // reaps the process; the error text

  WorkerOptions options_;
  std::mutex mutex_;
  int fd_ = -1;
  int pid_ = -1;
  uint64_t generation_ = 0;
  std::string version_;
};

class WorkerPool {
 public:
  WorkerPool(WorkerOptions options, size_t size);
  size_t size() const { return workers_.size(); }
  Worker& at(size_t i) { return *workers_[i]; }
  // The next worker, round robin.
  size_t next();

 private:
  std::vector<std::unique_ptr<Worker>> workers_;
  std::mutex mutex_;
  size_t next_ = 0;
};

}  // namespace stax::triton
