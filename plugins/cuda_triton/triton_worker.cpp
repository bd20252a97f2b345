#include "plugins/cuda_triton/triton_worker.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "plugins/cuda_triton/embedded_worker.h"
#include "stax/sdk/types.hpp"

extern char** environ;

namespace stax::triton {

namespace {

[[noreturn]] void fail(StaxErrorCode code, const std::string& msg) {
  throw sdk::PluginError(code, "cuda_triton: " + msg);
}

bool send_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool recv_all(int fd, char* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t k = ::recv(fd, out + done, n - done, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    done += static_cast<size_t>(k);
  }
  return true;
}

// Reads "<word> <length>\n" + payload. False when the peer is gone or the frame is malformed.
bool read_frame(int fd, std::string& word, std::string& payload) {
  std::string line;
  char c;
  while (true) {
    if (!recv_all(fd, &c, 1)) return false;
    if (c == '\n') break;
    line += c;
    if (line.size() > 64) return false;
  }
  size_t sp = line.find(' ');
  if (sp == std::string::npos) return false;
  word = line.substr(0, sp);
  size_t len = 0;
  try {
    len = std::stoull(line.substr(sp + 1));
  } catch (...) {
    return false;
  }
  payload.assign(len, '\0');
  return len == 0 || recv_all(fd, payload.data(), len);
}

}  // namespace

std::string Reply::field(const std::string& k) const {
  for (const auto& [key, v] : fields)
    if (key == k) return v;
  return "";
}

Worker::Worker(WorkerOptions options) : options_(std::move(options)) {}

Worker::~Worker() { stop(); }

void Worker::start(const std::string& what) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    fail(STAX_ERROR_RUNTIME, "socketpair failed for " + what + ": " + std::strerror(errno));
  // The child's end becomes its fd 3 (dup2 clears close-on-exec); never fd 3 already, where dup2
  // would leave the flag set.
  if (sv[1] == 3) {
    int moved = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
    ::close(sv[1]);
    sv[1] = moved;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);  // the worker's prints go to stderr
  std::vector<std::string> env_s;
  for (char** e = environ; e && *e; ++e) {
    std::string s = *e;
    if (s.rfind("TRITON_INTERPRET=", 0) == 0) continue;
    env_s.push_back(s);
  }
  if (options_.interpret) env_s.push_back("TRITON_INTERPRET=1");
  std::vector<char*> envp;
  for (std::string& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string script = embedded::kWorkerScript;
  std::vector<std::string> args_s = {options_.python, "-u", "-c", script, options_.workdir};
  std::vector<char*> argv;
  for (std::string& s : args_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, options_.python.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(sv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    fail(STAX_ERROR_UNAVAILABLE, "cannot start the Triton worker '" + options_.python +
                                     "' for " + what + ": " + std::strerror(rc) +
                                     " (the `python` option names the interpreter)");
  }
  fd_ = sv[0];
  pid_ = pid;
  ++generation_;
  std::string word, payload;
  if (!read_frame(fd_, word, payload) || word != "READY")
    fail(STAX_ERROR_UNAVAILABLE,
         "the Triton worker did not start for " + what + " (" + died(what) +
             "); is the `triton` Python package installed for " + options_.python +
             "? scripts/setup.sh installs it");
  version_ = payload;
}

std::string Worker::died(const std::string& what) {
  (void)what;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  std::string why = "exited";
  if (pid_ > 0) {
    int status = 0;
    // The socket is closed: a live worker exits on EOF; give it a moment, then kill it.
    pid_t r = 0;
    for (int i = 0; i < 200 && r == 0; ++i) {
      r = ::waitpid(pid_, &status, WNOHANG);
      if (r == 0) ::usleep(10000);
    }
    if (r == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      why = "killed after not answering";
    } else if (r > 0 && WIFEXITED(status)) {
      why = "exited with status " + std::to_string(WEXITSTATUS(status));
    } else if (r > 0 && WIFSIGNALED(status)) {
      why = std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
            ::strsignal(WTERMSIG(status)) + ")";
    }
  }
  pid_ = -1;
  return "the worker " + why;
}

void Worker::stop() {
  if (fd_ < 0) return;
  send_all(fd_, "QUIT 0\n");
  died("shutdown");
}

Reply Worker::call(const Request& r, const std::string& what) {
  if (fd_ < 0) start(what);
  std::string payload;
  for (const auto& [k, v] : r.fields) payload += k + "=" + v + "\n";
  payload += "\n" + r.body;
  std::string frame = r.word + " " + std::to_string(payload.size()) + "\n" + payload;
  std::string word, reply;
  if (!send_all(fd_, frame) || !read_frame(fd_, word, reply))
    fail(STAX_ERROR_RUNTIME, "the Triton worker died during " + r.word + " of " + what + " (" +
                                 died(what) + "); it is restarted by the next request");
  if (word == "ERR") fail(STAX_ERROR_COMPILE, r.word + " of " + what + " failed in Python:\n" + reply);
  if (word != "OK") {
    died(what);
    fail(STAX_ERROR_RUNTIME, "the Triton worker answered '" + word + "' to " + what);
  }
  Reply out;
  size_t end = reply.find("\n\n");
  if (end == std::string::npos) {
    out.body = reply;
    return out;
  }
  size_t pos = 0;
  while (pos < end) {
    size_t nl = reply.find('\n', pos);
    std::string line = reply.substr(pos, nl - pos);
    size_t eq = line.find('=');
    if (eq != std::string::npos) out.fields.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    pos = nl + 1;
  }
  out.body = reply.substr(end + 2);
  return out;
}

WorkerPool::WorkerPool(WorkerOptions options, size_t size) {
  for (size_t i = 0; i < std::max<size_t>(size, 1); ++i)
    workers_.push_back(std::make_unique<Worker>(options));
}

size_t WorkerPool::next() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t i = next_;
  next_ = (next_ + 1) % workers_.size();
  return i;
}

}  // namespace stax::triton
