// Work sharing for the native solvers: a persistent pool of worker threads that take chunks of an
// index range from one atomic counter (dynamic load balancing, so a slow core simply takes fewer
// chunks). Which thread computes a chunk never changes what the chunk computes, so results do not
// depend on the thread count.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace orrery {

class ThreadPool {
 public:
  static ThreadPool& instance();
  static unsigned hardware_threads();

  // Calls body(begin, end) over [0, count) in chunks of `chunk`, on `threads` threads
  // (the caller is one of them). Blocks until every chunk is done; rethrows the first exception.
  void parallel_for(std::size_t count, std::size_t chunk, unsigned threads,
                    const std::function<void(std::size_t, std::size_t)>& body);

  ~ThreadPool();

 private:
  ThreadPool();
  void restart_after_fork();
  void ensure_workers(unsigned workers);
  void worker_loop(unsigned worker_index);
  void run_chunks();

  std::mutex mutex_;
  std::mutex call_mutex_;  // one parallel_for at a time
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
  unsigned long generation_ = 0;
  unsigned active_workers_ = 0;  // workers taking part in the current call
  unsigned busy_ = 0;

  const std::function<void(std::size_t, std::size_t)>* body_ = nullptr;
  std::size_t count_ = 0, chunk_ = 1;
  std::atomic<std::size_t> next_{0};
  std::exception_ptr error_;
};

// `threads`, or every hardware thread for 0: what a solver's threads = 0 means.
inline unsigned resolve_threads(unsigned threads) { return threads == 0 ? ThreadPool::hardware_threads() : threads; }

}  // namespace orrery
