// Python worker processes (core/python/worker_process.hpp), forked by their zygote
// (worker_zygote.hpp), running datasets this test writes: real interpreters (Debian's python3,
// numpy, torch), real sockets, pidfds and memfds. A sample comes back as its structure and
// fields; draws depend only on the seed; the dataset's modules are imported once, by the
// zygote; the user's exceptions, a worker's death (its own exit, a signal from outside), a
// hang, a start that raises, a zygote killed under its workers and a reply a hostile dataset
// forges each end as their contract says, and no process is left.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/python/worker_pool.hpp"
#include "core/python/worker_zygote.hpp"
#include "support/python_workers.hpp"

namespace conveyor {
namespace {

using namespace std::chrono_literals;

// The datasets, as a user writes them.
constexpr const char* datasets_py = R"(
import os, random, signal, socket, struct, time
import numpy as np
import torch

with open(os.path.join(os.path.dirname(__file__), "imports.log"), "a") as log:
    log.write("%d\n" % os.getpid())  # once per import of this module


class Fields:
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return (np.full((2, 3), i, np.float32), torch.tensor([i, 2 * i]),
                {"n": i, "x": i / 2, "ok": i % 2 == 0, "name": "s%d" % i, "raw": b"xy"},
                torch.arange(4, dtype=torch.bfloat16), np.zeros((0, 5), np.uint8))


class Draws:
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return (random.random(), np.random.rand(), torch.rand(1))


class Sized:  # a large sample among smaller ones
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return np.zeros([32 << 20, 1 << 20, 4 << 20, 1 << 20][i], np.uint8)


class Faulty:
    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == 3:
            raise ValueError("sample %d is bad" % i)
        if i == 4:
            os._exit(7)
        if i == 5:
            time.sleep(3600)
        if i == 6:  # answers for the worker (on its one socket), with a field outside its region
            s = socket.socket(fileno=os.dup(own_socket()))
            name = b"sample"
            table = struct.pack("<BBBxH", 1, 1, 1, len(name)) + name + struct.pack("<QQQ", 16, 0, 16)
            s.sendmsg([struct.pack("<BxxxQQII", 3, i, 0, 1, 2) + b"{}" + table])
            time.sleep(3600)
        return np.arange(i)


def own_socket():
    for f in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + f).startswith("socket:"):
                return int(f)
        except OSError:
            pass  # the listing's own descriptor, closed meanwhile


def failing_init(worker_id):
    raise RuntimeError("no GPU for worker %d" % worker_id)
)";

class PythonWorker : public ::testing::Test {
 protected:
  // The zygote of dataset `cls`, started the first time (one dataset per test).
  worker_zygote& zygote(const std::string& cls, const std::string& init_fn = "") {
    if (!zygote_) {
      auto z = worker_zygote::start(
          testing::python_worker_launch(dir_, "datasets", datasets_py, cls, init_fn));
      if (!z) {
        ADD_FAILURE() << z.error().what();
        std::abort();
      }
      zygote_ = std::move(*z);
    }
    return *zygote_;
  }

  worker_process started(const std::string& cls, std::uint32_t id = 0) {
    auto w = zygote(cls).fork_worker(id);
    if (!w) {
      ADD_FAILURE() << w.error().what();
      std::abort();
    }
    return std::move(*w);
  }

  static expected<worker_sample> sample(worker_process& w, std::uint64_t index,
                                        std::uint64_t seed = 1) {
    if (auto asked = w.ask(0, index, seed); !asked) {
      return asked.error();
    }
    return w.await(60s);
  }

  testing::temp_dir dir_;
  std::shared_ptr<worker_zygote> zygote_;
};

// Whether process `pid` is gone (reaped: not even a zombie of ours is left).
bool gone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

const worker_field& field(const worker_sample& s, const std::string& name) {
  for (const auto& f : s.fields) {
    if (f.name == name) {
      return f;
    }
  }
  ADD_FAILURE() << "no field " << name;
  return s.fields.front();
}

// The bytes of field `f`, copied out of the worker's memfd (as the step does, before the next ask).
std::vector<std::uint8_t> bytes_of(const worker_sample& s, const worker_field& f) {
  std::vector<std::uint8_t> out(f.bytes);
  auto copied = s.copy(f, out.data());
  EXPECT_TRUE(copied) << copied.error().what();
  return out;
}

// Every field's bytes, in order.
std::vector<std::uint8_t> all_bytes(const worker_sample& s) {
  std::vector<std::uint8_t> all;
  for (const auto& f : s.fields) {
    const auto b = bytes_of(s, f);
    all.insert(all.end(), b.begin(), b.end());
  }
  return all;
}

template <class T>
T value_of(const worker_sample& s, const worker_field& f, std::size_t i = 0) {
  T v{};
  std::memcpy(&v, bytes_of(s, f).data() + i * sizeof(T), sizeof(T));
  return v;
}

// The inode of the memfd an answer's bytes lie in.
ino_t inode_of(const worker_sample& s) {
  struct stat st {};
  EXPECT_EQ(::fstat(s.file->get(), &st), 0);
  return st.st_ino;
}

TEST_F(PythonWorker, ASampleComesBackAsItsStructureAndFieldsInTheWorkersOwnMemfd) {
  auto w = started("Fields");
  auto s = sample(w, 7);
  ASSERT_TRUE(s) << s.error().what();
  EXPECT_EQ(s->index, 7u);
  ASSERT_EQ(s->fields.size(), 9u);
  const auto& array = field(*s, "sample.0");
  EXPECT_EQ(array.kind, leaf_kind::ndarray);
  EXPECT_EQ(array.dtype, worker_dtype::float32);
  EXPECT_EQ(array.shape, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(value_of<float>(*s, array, 5), 7.0f);
  const auto& tensor = field(*s, "sample.1");
  EXPECT_EQ(tensor.kind, leaf_kind::tensor);
  EXPECT_EQ(tensor.dtype, worker_dtype::int64);
  EXPECT_EQ(value_of<std::int64_t>(*s, tensor, 1), 14);
  EXPECT_EQ(field(*s, "sample.2.n").kind, leaf_kind::int_);
  EXPECT_EQ(value_of<std::int64_t>(*s, field(*s, "sample.2.n")), 7);
  EXPECT_EQ(value_of<double>(*s, field(*s, "sample.2.x")), 3.5);
  EXPECT_EQ(field(*s, "sample.2.ok").kind, leaf_kind::bool_);
  EXPECT_EQ(value_of<bool>(*s, field(*s, "sample.2.ok")), false);
  const auto& name = field(*s, "sample.2.name");
  EXPECT_EQ(name.kind, leaf_kind::str);
  const auto text = bytes_of(*s, name);
  EXPECT_EQ(std::string(text.begin(), text.end()), "s7");
  EXPECT_EQ(field(*s, "sample.2.raw").kind, leaf_kind::bytes);
  const auto& half = field(*s, "sample.3");
  EXPECT_EQ(half.dtype, worker_dtype::bfloat16);
  EXPECT_EQ(value_of<std::uint16_t>(*s, half, 1), 0x3f80);  // 1.0 in bfloat16
  EXPECT_EQ(field(*s, "sample.4").shape, (std::vector<std::uint64_t>{0, 5}));
  EXPECT_NE(s->structure.find("\"tuple\""), std::string::npos) << s->structure;
  EXPECT_NE(s->structure.find("\"dict\""), std::string::npos) << s->structure;
  // The next sample's bytes go into the same memfd: none is made (zeroed, freed) per sample.
  ASSERT_TRUE(s->file);
  const auto first = inode_of(*s);
  auto next = sample(w, 3);
  ASSERT_TRUE(next) << next.error().what();
  EXPECT_EQ(inode_of(*next), first);
  EXPECT_EQ(value_of<float>(*next, field(*next, "sample.0")), 3.0f);
}

TEST_F(PythonWorker, AWorkersMemfdIsCutBackAfterALargeSampleNotAfterEachSmallerOne) {
  auto w = started("Sized");
  auto held = [&](std::uint64_t index) -> std::int64_t {
    auto s = sample(w, index);
    EXPECT_TRUE(s && s->file) << (s ? "no memfd" : s.error().what());
    struct stat st {};
    return s && s->file && ::fstat(s->file->get(), &st) == 0 ? st.st_size : -1;
  };
  constexpr std::int64_t mib = 1 << 20;
  EXPECT_EQ(held(0), 32 * mib);
  EXPECT_EQ(held(1), 1 * mib);  // a quarter of it or less, past 8 MiB: its pages go
  EXPECT_EQ(held(2), 4 * mib);  // grown again
  EXPECT_EQ(held(3), 4 * mib);  // under 8 MiB it is kept: no pages freed and taken again
}

TEST_F(PythonWorker, DrawsDependOnTheSeedNeverOnTheWorker) {
  auto one = started("Draws", 0);
  auto other = started("Draws", 1);
  // Each answer copied out before its worker is asked again (its memfd holds the next one).
  auto drawn = [&](worker_process& w, std::uint64_t index, std::uint64_t seed) {
    auto s = sample(w, index, seed);
    EXPECT_TRUE(s) << s.error().what();
    return s ? all_bytes(*s) : std::vector<std::uint8_t>{};
  };
  const auto a = drawn(one, 2, 42);
  (void)drawn(other, 9, 5);  // another sample first: the worker's state must not matter
  const auto b = drawn(other, 2, 42);
  const auto c = drawn(one, 2, 43);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST_F(PythonWorker, AnExceptionNamesTheIndexTypeMessageAndFrameAndTheWorkerLivesOn) {
  auto w = started("Faulty");
  auto bad = sample(w, 3);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), errc::transform_error);
  const auto text = bad.error().message();
  EXPECT_NE(text.find("dataset[3]"), std::string::npos) << text;
  EXPECT_NE(text.find("ValueError: sample 3 is bad"), std::string::npos) << text;
  EXPECT_NE(text.find("datasets.py:"), std::string::npos) << text;
  EXPECT_NE(text.find("__getitem__"), std::string::npos) << text;
  auto next = sample(w, 2);
  ASSERT_TRUE(next) << next.error().what();
  EXPECT_EQ(field(*next, "sample").shape, (std::vector<std::uint64_t>{2}));
}

TEST_F(PythonWorker, AWorkerThatExitsIsNamedWithItsExitCodeAndReaped) {
  auto w = started("Faulty", 4);
  const auto pid = w.pid();
  auto died = sample(w, 4);
  ASSERT_FALSE(died);
  EXPECT_EQ(died.error().code(), errc::worker_failed);
  EXPECT_NE(died.error().message().find("Python worker 4 (pid " + std::to_string(pid)),
            std::string::npos)
      << died.error().message();
  EXPECT_NE(died.error().message().find("exited with code 7"), std::string::npos)
      << died.error().message();
  EXPECT_FALSE(w.alive());
  EXPECT_TRUE(gone(pid));
  EXPECT_EQ(w.ask(0, 1, 1).error().code(), errc::worker_failed);
}

TEST_F(PythonWorker, AWorkerKilledFromOutsideIsNamedWithItsSignal) {
  auto w = started("Faulty");
  ASSERT_TRUE(w.ask(0, 5, 1));  // sleeps
  ASSERT_EQ(::kill(w.pid(), SIGKILL), 0);
  auto died = w.await(60s);
  ASSERT_FALSE(died);
  EXPECT_EQ(died.error().code(), errc::worker_failed);
  EXPECT_NE(died.error().message().find("killed by signal 9"), std::string::npos)
      << died.error().message();
}

TEST_F(PythonWorker, AHungSampleTimesOutAndItsWorkerIsKilledAndReaped) {
  auto w = started("Faulty");
  const auto pid = w.pid();
  ASSERT_TRUE(w.ask(0, 5, 1));
  auto waited = w.await(200ms);
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error().code(), errc::timed_out);
  EXPECT_TRUE(w.alive());
  w.kill();
  EXPECT_FALSE(w.alive());
  EXPECT_TRUE(gone(pid));
}

TEST_F(PythonWorker, AForgedReplyIsRefusedNamingWhatIsWrongAndItsWorkerIsKilled) {
  auto w = started("Faulty");
  const auto pid = w.pid();
  auto forged = sample(w, 6);
  ASSERT_FALSE(forged);
  EXPECT_EQ(forged.error().code(), errc::worker_failed);
  EXPECT_NE(forged.error().message().find("field sample lies outside the sample's region"),
            std::string::npos)
      << forged.error().message();
  EXPECT_TRUE(gone(pid));
}

TEST_F(PythonWorker, AStartThatRaisesIsRefusedNamingTheException) {
  auto w = zygote("Fields", "failing_init").fork_worker(2);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code(), errc::worker_failed);
  EXPECT_NE(w.error().message().find("RuntimeError: no GPU for worker 2"), std::string::npos)
      << w.error().message();
}

TEST_F(PythonWorker, ASetupFileIsReadWhenItsZygoteIsSpawnedAndOneMissingIsNamed) {
  auto launch = testing::python_worker_launch(dir_, "datasets", datasets_py, "Fields", "");
  launch.setup.reset();  // read from the file the launch was read from
  launch.setup_file =
      testing::write_python_setup(dir_, "datasets", datasets_py, "Fields", "").string();
  auto z = worker_zygote::start(launch);
  ASSERT_TRUE(z) << z.error().what();
  auto w = (*z)->fork_worker(0);
  ASSERT_TRUE(w) << w.error().what();
  EXPECT_TRUE(sample(*w, 1));
  launch.setup_file = (dir_ / "none.setup").string();
  auto missing = worker_zygote::start(launch);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), errc::worker_failed);
  EXPECT_NE(missing.error().message().find("its setup: " + launch.setup_file), std::string::npos)
      << missing.error().message();
}

TEST_F(PythonWorker, ADestroyedWorkerIsStoppedAndReaped) {
  pid_t pid = -1;
  {
    auto w = started("Fields");
    pid = w.pid();
    ASSERT_TRUE(sample(w, 1));
  }
  EXPECT_TRUE(gone(pid));
}

// The pid of `pid`'s parent, from /proc (-1 when it is gone).
pid_t parent_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto end = line.rfind(')');
  if (end == std::string::npos) {
    return -1;
  }
  std::istringstream rest(line.substr(end + 2));
  char state = 0;
  pid_t parent = -1;
  rest >> state >> parent;
  return parent;
}

TEST_F(PythonWorker, WorkersAreForkedFromOneZygoteThatImportedTheDatasetOnce) {
  auto one = started("Fields", 0);
  auto other = started("Fields", 1);
  ASSERT_TRUE(sample(one, 1) && sample(other, 2));
  EXPECT_EQ(parent_of(one.pid()), zygote_->pid());
  EXPECT_EQ(parent_of(other.pid()), zygote_->pid());
  // Imported by the process that pickled the dataset (tests/python/worker_setup.py), then by
  // the zygote alone.
  const auto log = testing::read_file(dir_ / "imports.log");
  const std::string text(log.begin(), log.end());
  const auto zygote_line = "\n" + std::to_string(zygote_->pid()) + "\n";
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_EQ(text.size() - text.rfind(zygote_line), zygote_line.size()) << text;
}

TEST_F(PythonWorker, AWorkerOutlivesItsKilledZygoteAndIsStillEndedAndNamed) {
  auto w = started("Faulty", 3);
  const auto pid = w.pid();
  unique_fd zygote(static_cast<int>(::syscall(SYS_pidfd_open, zygote_->pid(), 0)));
  ASSERT_EQ(::kill(zygote_->pid(), SIGKILL), 0);
  pollfd ended{zygote.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&ended, 1, 60000), 1);  // its descriptors are closed once it has ended
  EXPECT_FALSE(zygote_->alive());
  auto s = sample(w, 2);
  ASSERT_TRUE(s) << s.error().what();
  auto forked = zygote_->fork_worker(4);
  ASSERT_FALSE(forked);
  EXPECT_EQ(forked.error().code(), errc::worker_failed);
  EXPECT_NE(forked.error().message().find("zygote"), std::string::npos) << forked.error().message();
  ASSERT_TRUE(w.ask(0, 4, 1));  // exits with code 7; its status died with the zygote
  auto died = w.await(60s);
  ASSERT_FALSE(died);
  EXPECT_NE(died.error().message().find("Python worker 3 (pid " + std::to_string(pid)),
            std::string::npos)
      << died.error().message();
  EXPECT_NE(died.error().message().find("lost with its zygote"), std::string::npos)
      << died.error().message();
}

TEST_F(PythonWorker, APoolForksFromANewZygoteOnceItsZygoteDied) {
  auto pool = worker_pool::make(
      testing::python_worker_launch(dir_, "datasets", datasets_py, "Fields", ""), 2);
  auto first = pool->take();
  ASSERT_TRUE(first) << first.error().what();
  const auto old = pool->zygote_pid();
  unique_fd zygote(static_cast<int>(::syscall(SYS_pidfd_open, old, 0)));
  ASSERT_EQ(::kill(old, SIGKILL), 0);
  pollfd ended{zygote.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&ended, 1, 60000), 1);
  auto second = pool->take();
  ASSERT_TRUE(second) << second.error().what();
  EXPECT_NE(pool->zygote_pid(), old);
  EXPECT_EQ(parent_of((*second)->pid()), pool->zygote_pid());
  EXPECT_TRUE(sample(**first, 1));  // the first zygote's worker lives on
  EXPECT_TRUE(sample(**second, 2));
  EXPECT_EQ(pool->started(), 2u);
}

TEST_F(PythonWorker, APoolShowsEachPlacesWorkerAsTheMonitorShowsAnActor) {
  auto pool = worker_pool::make(
      testing::python_worker_launch(dir_, "datasets", datasets_py, "Faulty", ""), 2);
  auto lease = pool->take();
  ASSERT_TRUE(lease) << lease.error().what();
  const auto pid = (*lease)->pid();
  for (std::uint64_t i : {1, 2, 3}) {  // 3 raises: an answer all the same
    ASSERT_TRUE((*lease)->ask(0, i, 1));
    lease->asked();
    (void)(*lease)->await(60s);
    lease->answered();
  }
  ASSERT_TRUE((*lease)->ask(0, 5, 1));  // hangs
  lease->asked();
  auto rows = pool->figures();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "python-worker-0");
  EXPECT_EQ(rows[0].pid, pid);
  EXPECT_EQ(rows[0].items, 3u);
  EXPECT_TRUE(rows[0].in_flight);
  EXPECT_GT(rows[0].p50_us, 0);
  EXPECT_EQ(rows[1].pid, -1);  // never started
  EXPECT_EQ(rows[1].items, 0u);
  {
    auto dead = std::move(*lease);
    dead->kill();
  }  // its place is free again: the next worker takes it
  lease = pool->take();
  ASSERT_TRUE(lease) << lease.error().what();
  rows = pool->figures();
  EXPECT_FALSE(rows[0].in_flight);
  EXPECT_EQ(rows[0].pid, (*lease)->pid());
  EXPECT_NE(rows[0].pid, pid);
}

TEST_F(PythonWorker, AForkedReplyWithoutThePidfdOfItsPidIsRefused) {
  auto w = started("Fields");
  auto forked = [&](pid_t pid, int first, int second) {
    received_message m;
    m.bytes = {5, 0, 0, 0};
    for (int i = 0; i < 4; ++i) {
      m.bytes.push_back(static_cast<std::uint8_t>(static_cast<std::uint32_t>(pid) >> (8 * i)));
    }
    m.fds.emplace_back(::dup(first));
    m.fds.emplace_back(::dup(second));
    return decode_reply(std::move(m));
  };
  int status[2];
  ASSERT_EQ(::pipe2(status, O_CLOEXEC), 0);
  unique_fd read_end(status[0]);
  unique_fd write_end(status[1]);
  unique_fd ours(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)));
  ASSERT_TRUE(ours);
  EXPECT_TRUE(forked(::getpid(), ours.get(), read_end.get()));
  auto other = forked(w.pid(), ours.get(), read_end.get());  // a pidfd of another process
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message().find("without a pidfd of pid"), std::string::npos)
      << other.error().message();
  EXPECT_FALSE(forked(::getpid(), read_end.get(), read_end.get()));  // no pidfd at all
  EXPECT_FALSE(forked(::getpid(), ours.get(), write_end.get()));     // the pipe's write end
  EXPECT_FALSE(forked(0, ours.get(), read_end.get()));
}

// A Python step's answer (python_transform.hpp): one uint8 [8] field at offset 0 of a region of
// 8 bytes in the worker's own memfd.
expected<worker_reply> step_answer(int file) {
  received_message m;
  m.bytes = {3, 0, 0, 0};
  const auto put = [&](std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) {
      m.bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }
  };
  put(7, 8);  // index
  put(8, 8);  // region bytes
  put(1, 4);  // fields
  put(2, 4);  // structure's size
  m.bytes.insert(m.bytes.end(), {'{', '}'});
  m.bytes.insert(m.bytes.end(), {1, 1, 1, 0});  // ndarray, uint8, rank 1
  put(1, 2);
  m.bytes.push_back('x');
  put(8, 8);  // shape
  put(0, 8);  // offset
  put(8, 8);  // bytes
  m.fds.emplace_back(::dup(file));
  return decode_reply(std::move(m));
}

TEST(PythonStepAnswer, IsCopiedOutOfTheWorkersMemfdAndRefusedWhereItCannotHoldIt) {
  unique_fd file(::memfd_create("answer", MFD_CLOEXEC));
  ASSERT_TRUE(file);
  const std::uint8_t bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_EQ(::pwrite(file.get(), bytes, 8, 0), 8);
  auto got = step_answer(file.get());
  ASSERT_TRUE(got) << got.error().message();
  std::uint8_t out[8] = {};
  ASSERT_TRUE(got->sample.copy(got->sample.fields[0], out));
  EXPECT_EQ(std::memcmp(out, bytes, 8), 0);
  // The worker shrinks its memfd before the owner reads: the read is cut short, an error.
  ASSERT_EQ(::ftruncate(file.get(), 4), 0);
  auto cut = got->sample.copy(got->sample.fields[0], out);
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().message().find("cut short"), std::string::npos) << cut.error().message();
  // A memfd smaller than the region said, and a pipe, are refused as they come.
  auto small = step_answer(file.get());
  ASSERT_FALSE(small);
  EXPECT_NE(small.error().message().find("not one file of at least 8 bytes"), std::string::npos)
      << small.error().message();
  int pipe_ends[2];
  ASSERT_EQ(::pipe2(pipe_ends, O_CLOEXEC), 0);
  unique_fd read_end(pipe_ends[0]);
  unique_fd write_end(pipe_ends[1]);
  EXPECT_FALSE(step_answer(read_end.get()));
}

}  // namespace
}  // namespace conveyor
