#include "python/src/interruptible.h"

#include <pythread.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace stax::python {

namespace {

bool on_main_thread() {
  static const unsigned long main_ident = [] {
    nb::object main = nb::module_::import_("threading").attr("main_thread")();
    return nb::cast<unsigned long>(main.attr("ident"));
  }();
  return PyThread_get_thread_ident() == main_ident;
}

}  // namespace

void run_interruptible(CancellationToken& token, const std::function<void()>& work) {
  if (!on_main_thread()) {
    nb::gil_scoped_release release;
    work();
    return;
  }
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr failure;
  std::thread helper([&] {
    try {
      work();
    } catch (...) {
      failure = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
    cv.notify_one();
  });
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;  // the signal handler's error
  for (;;) {
    {
      nb::gil_scoped_release release;
      std::unique_lock<std::mutex> lock(mutex);
      if (cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return done; })) break;
    }
    if (!type && PyErr_CheckSignals() != 0) {
      PyErr_Fetch(&type, &value, &trace);
      token.cancel();
    }
  }
  {
    nb::gil_scoped_release release;
    helper.join();
  }
  if (type) {
    PyErr_Restore(type, value, trace);
    throw nb::python_error();
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace stax::python
