#include "parallel.hpp"

#include <new>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif

namespace orrery {

ThreadPool::ThreadPool() {
#if defined(__unix__) || defined(__APPLE__)
  // A forked child (Python's multiprocessing forks by default on Linux) holds only the thread that
  // forked: without this, its first parallel_for would wait for ever on workers that are not there.
  pthread_atfork(nullptr, nullptr, [] { instance().restart_after_fork(); });
#endif
}

void ThreadPool::restart_after_fork() {
  // In the child the workers are gone, and a lock one of them (or any other thread) held at the
  // fork stays held: start again with fresh locks and no workers. The old thread handles are leaked
  // on purpose: destroying a joinable std::thread aborts, and there is nothing to join.
  new std::vector<std::thread>(std::move(workers_));
  workers_.clear();
  new (&mutex_) std::mutex;
  new (&call_mutex_) std::mutex;
  new (&wake_) std::condition_variable;
  new (&done_) std::condition_variable;
  stopping_ = false;
  generation_ = 0;
  active_workers_ = 0;
  busy_ = 0;
  body_ = nullptr;
  error_ = nullptr;
}

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool;
  return pool;
}

unsigned ThreadPool::hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::ensure_workers(unsigned workers) {
  while (workers_.size() < workers) {
    unsigned index = static_cast<unsigned>(workers_.size());
    workers_.emplace_back([this, index] { worker_loop(index); });
  }
}

void ThreadPool::run_chunks() {
  for (;;) {
    std::size_t begin = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (begin >= count_) return;
    std::size_t end = std::min(count_, begin + chunk_);
    try {
      (*body_)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
      next_.store(count_, std::memory_order_relaxed);
      return;
    }
  }
}

void ThreadPool::worker_loop(unsigned worker_index) {
  unsigned long seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || (generation_ != seen && worker_index < active_workers_); });
      if (stopping_) return;
      seen = generation_;
    }
    run_chunks();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--busy_ == 0) done_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(std::size_t count, std::size_t chunk, unsigned threads,
                              const std::function<void(std::size_t, std::size_t)>& body) {
  if (count == 0) return;
  chunk = std::max<std::size_t>(1, chunk);
  threads = std::max(1u, threads);
  std::size_t chunks = (count + chunk - 1) / chunk;
  unsigned helpers = static_cast<unsigned>(std::min<std::size_t>(threads - 1, chunks - 1));
  if (helpers == 0) {
    body(0, count);  // chunks in order on this thread: same arithmetic as any split
    return;
  }
  std::lock_guard<std::mutex> call_lock(call_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ensure_workers(helpers);
    body_ = &body;
    count_ = count;
    chunk_ = chunk;
    next_.store(0, std::memory_order_relaxed);
    error_ = nullptr;
    active_workers_ = helpers;
    busy_ = helpers;
    ++generation_;
  }
  wake_.notify_all();
  run_chunks();
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return busy_ == 0; });
    error = error_;
    body_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace orrery
