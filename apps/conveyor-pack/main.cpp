// conveyor-pack: packs an image folder or list file, a WebDataset tar set or a directory of
// key.ext files into record shards, generates the built-in sample dataset (--synthetic), and
// verifies shards (--verify).
//   conveyor-pack INPUT --out DIR [--shard-size 64M] [--restart] [--verify]
//   conveyor-pack --webdataset TARS --out DIR [--shard-size 64M] [--verify]
//   conveyor-pack --parts DIR --out DIR [--shard-size 64M] [--verify]
//   conveyor-pack --synthetic N --images DIR --out DIR [--large-fraction 0.1] [--restart]
//                 [--verify]
// --restart stores every sequential JPEG rewritten with a restart marker per MCU row and their
// index (core/codecs/jpeg_restart.hpp: the same pixels), so that the node decodes a crop from
// its first MCU row instead of the image's first; others are stored as they are, counted by
// reason.
//   conveyor-pack --verify DATASET_DIR
//   conveyor-pack --synthetic-volumes N --out DIR [--seed S]
// --out s3://bucket/prefix packs into a staging directory (--stage DIR, or a temporary one
// removed after) and uploads the set there (core/remote/upload_dataset.hpp: shards first, in
// multipart uploads when large, the manifest last), to the store of --endpoint-url (or
// AWS_ENDPOINT_URL) with the credentials of the environment or --profile.
// --synthetic-volumes writes N KiTS19-like cases as the MLPerf UNet3D reference's
// preprocessing leaves them (case_XXXXX_x.npy float32 1 x D x H x W, case_XXXXX_y.npy uint8;
// core/codecs/synthetic_volumes.hpp), for config/examples/unet3d-kits19.toml.
// --webdataset TARS: a directory of .tar files (sorted by name) or one .tar file, read as
// WebDataset does (members grouped by key, each a part named by its extension); --parts DIR:
// files named key.ext anywhere under DIR, grouped by the same rule (a symbolic link followed
// only to a file inside DIR: core/storage/contained_file.hpp). Each sample becomes one
// multipart record (version 2 shards): its parts' bytes as they are, no decoding; its label
// the integer of its "cls" part (0 without one; the part is kept too). A damaged or duplicate
// sample stops packing with an error naming its tar and key.
// Exit codes: 0 ok; 1 a failure while running or records that fail verification; 2 a bad
// command line or bad input (missing path, empty directory, bad list file).
#include "apps/common/command_line.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "apps/common/progress_bar.hpp"
#include "core/base/byte_size.hpp"
#include "core/base/log.hpp"
#include "core/codecs/jpeg_restart.hpp"
#include "core/codecs/restart_index.hpp"
#include "core/codecs/synthetic_images.hpp"
#include "core/codecs/synthetic_volumes.hpp"
#include "core/remote/s3_location.hpp"
#include "core/remote/upload_dataset.hpp"
#include "core/storage/dataset_packer.hpp"
#include "core/storage/sharded_dataset.hpp"
#include "core/storage/webdataset.hpp"

namespace {

using namespace conveyor;
using clock_type = std::chrono::steady_clock;

struct arguments {
  std::string input;
  std::string webdataset;
  std::string parts;
  std::string out;
  std::string images;
  std::string shard_size = "64M";
  bool verify = false;
  bool restart = false;
  std::uint64_t synthetic = 0;
  synthetic_options synthetic_opts;
  std::uint64_t synthetic_volumes = 0;
  std::string stage;  ///< where --out s3:// packs before uploading
  s3_settings store;  ///< --endpoint-url, --region, --profile
};

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

double mb(std::uint64_t bytes) {
  return static_cast<double>(bytes) / 1e6;
}

// Bad input is the operator's to fix (exit 2); anything else failed while running (exit 1).
int exit_code_of(const error& e) {
  switch (e.code()) {
    case errc::not_found:
    case errc::empty_dataset:
    case errc::invalid_config:
    case errc::invalid_argument:
      return 2;
    default:
      return 1;
  }
}

int fail(const error& e) {
  log("pack")->error("{}", e.what());
  return exit_code_of(e);
}

expected<image_list> list_input(const std::filesystem::path& input) {
  std::error_code ec;
  return std::filesystem::is_regular_file(input, ec) ? read_image_list_file(input)
                                                     : scan_image_folder(input);
}

int generate(const arguments& args) {
  auto opts = args.synthetic_opts;
  opts.count = args.synthetic;
  auto start = clock_type::now();
  progress_bar bar("generate", opts.count);
  auto made = generate_synthetic_images(
      args.images, opts, [&](std::uint64_t done, std::uint64_t) { bar.update(done); });
  bar.finish();
  if (!made) {
    return fail(made.error());
  }
  std::printf("generated %llu JPEGs (%llu large) in %s: %.1f MB in %.1f s\n",
              static_cast<unsigned long long>(made->files),
              static_cast<unsigned long long>(made->large), args.images.c_str(), mb(made->bytes),
              seconds_since(start));
  return 0;
}

int generate_volumes(const arguments& args) {
  synthetic_volume_options opts;
  opts.count = args.synthetic_volumes;
  opts.seed = args.synthetic_opts.seed;
  auto start = clock_type::now();
  progress_bar bar("generate", opts.count);
  auto made = generate_synthetic_volumes(
      args.out, opts, [&](std::uint64_t done, std::uint64_t) { bar.update(done); });
  bar.finish();
  if (!made) {
    return fail(made.error());
  }
  std::printf("generated %llu cases (%.1f Mvoxels) in %s: %.1f MB in %.1f s\n",
              static_cast<unsigned long long>(made->cases), static_cast<double>(made->voxels) / 1e6,
              args.out.c_str(), mb(made->bytes), seconds_since(start));
  return 0;
}

/// --restart: rewrites each file (core/codecs/jpeg_restart.hpp) and counts what it kept, by
/// reason.
struct restart_tally {
  std::uint64_t rewritten = 0;
  std::uint64_t marker_bytes = 0;  ///< the restart markers themselves
  std::uint64_t index_bytes = 0;   ///< the index segments
  std::map<std::string, std::uint64_t> kept;

  payload_rewrite rewrite() {
    return [this](const image_entry& entry, std::vector<std::uint8_t> bytes) {
      auto r = add_restart_index(bytes.data(), bytes.size());
      if (r.jpeg) {
        ++rewritten;
        if (auto index = find_restart_index(r.jpeg->data(), r.jpeg->size())) {
          marker_bytes += 2 * (index->rows - 1);  // FF Dn after every row but the last
          index_bytes += restart_index_segment_size(index->rows);
        }
        return std::move(*r.jpeg);
      }
      if (++kept[r.kept_because] == 1) {
        log("pack")->info("--restart: {} stored as it is ({}); others like it are counted",
                          entry.key, r.kept_because);
      }
      return bytes;
    };
  }

  void print(const pack_summary& packed) const {
    const double in = mb(packed.input_bytes);
    const double out = mb(packed.payload_bytes);
    std::printf(
        "restart index: %llu JPEGs rewritten; %.1f MB -> %.1f MB (%+.2f%%: the Huffman tables "
        "optimised, restart markers %.3f MB, index segments %.3f MB)",
        static_cast<unsigned long long>(rewritten), in, out, in > 0 ? 100.0 * (out - in) / in : 0.0,
        mb(marker_bytes), mb(index_bytes));
    for (const auto& [reason, count] : kept) {
      std::printf("; %llu kept (%s)", static_cast<unsigned long long>(count), reason.c_str());
    }
    std::printf("\n");
  }
};

pack_progress updates(progress_bar& bar) {
  return [&bar](std::uint64_t done, std::uint64_t) { bar.update(done); };
}

int pack(const arguments& args, const std::string& input) {
  auto shard_bytes = parse_byte_size(args.shard_size);
  if (!shard_bytes) {
    return fail(error{errc::invalid_argument, "--shard-size: " + shard_bytes.error().message()});
  }
  auto images = list_input(input);
  if (!images) {
    return fail(images.error());
  }
  auto start = clock_type::now();
  progress_bar bar("pack", images->entries.size());
  restart_tally tally;
  auto packed = pack_images(*images, args.out, {*shard_bytes}, updates(bar),
                            args.restart ? tally.rewrite() : payload_rewrite{});
  bar.finish();
  if (!packed) {
    return fail(packed.error());
  }
  auto s = seconds_since(start);
  std::printf("packed %llu images of %zu classes into %llu shards in %s: %.1f MB, %.1f MB/s\n",
              static_cast<unsigned long long>(packed->records), images->class_names.size(),
              static_cast<unsigned long long>(packed->shards), args.out.c_str(),
              mb(packed->dataset_bytes), s > 0 ? mb(packed->input_bytes) / s : 0.0);
  if (args.restart) {
    tally.print(*packed);
  }
  return 0;
}

// The samples of --webdataset or --parts, packed with a progress bar.
expected<pack_summary> pack_samples(const arguments& args, std::uint64_t shard_bytes) {
  if (!args.webdataset.empty()) {
    auto tars = webdataset::open(args.webdataset);
    if (!tars) {
      return std::move(tars).error();
    }
    progress_bar bar("pack", tars->size());
    auto packed = pack_webdataset(*tars, args.out, {shard_bytes}, updates(bar));
    bar.finish();
    return packed;
  }
  auto files = scan_part_files(args.parts);
  if (!files) {
    return std::move(files).error();
  }
  progress_bar bar("pack", files->samples.size());
  auto packed = pack_part_files(*files, args.out, {shard_bytes}, updates(bar));
  bar.finish();
  return packed;
}

// --webdataset or --parts: several parts per record.
int pack_multipart(const arguments& args) {
  auto shard_bytes = parse_byte_size(args.shard_size);
  if (!shard_bytes) {
    return fail(error{errc::invalid_argument, "--shard-size: " + shard_bytes.error().message()});
  }
  auto start = clock_type::now();
  auto packed = pack_samples(args, *shard_bytes);
  if (!packed) {
    return fail(packed.error());
  }
  auto s = seconds_since(start);
  const auto& input = args.webdataset.empty() ? args.parts : args.webdataset;
  std::printf("packed %llu samples of %s into %llu shards in %s: %.1f MB, %.1f MB/s\n",
              static_cast<unsigned long long>(packed->records), input.c_str(),
              static_cast<unsigned long long>(packed->shards), args.out.c_str(),
              mb(packed->dataset_bytes), s > 0 ? mb(packed->input_bytes) / s : 0.0);
  return 0;
}

int verify(const std::string& dir) {
  auto start = clock_type::now();
  auto total = read_manifest(dir);
  if (!total) {
    return fail(total.error());
  }
  progress_bar bar("verify", total->total_records());
  auto report = verify_dataset(dir, [&](std::uint64_t done) { bar.update(done); });
  bar.finish();
  if (!report) {
    return fail(report.error());
  }
  auto s = seconds_since(start);
  std::printf("verified %llu records in %llu shards: %.1f MB, %.1f MB/s, %zu problems\n",
              static_cast<unsigned long long>(report->records),
              static_cast<unsigned long long>(report->shards), mb(report->payload_bytes),
              s > 0 ? mb(report->payload_bytes) / s : 0.0, report->problems.size());
  for (const auto& p : report->problems) {
    log("pack")->error("{}", p.what());
  }
  return report->problems.empty() ? 0 : 1;
}

int run(const arguments& args) {
  if (args.synthetic_volumes > 0) {
    if (args.out.empty()) {
      return fail(error{errc::invalid_argument, "--synthetic-volumes needs --out DIR"});
    }
    return generate_volumes(args);
  }
  if (args.synthetic > 0) {
    if (args.images.empty() || args.out.empty()) {
      return fail(error{errc::invalid_argument, "--synthetic needs --images DIR and --out DIR"});
    }
    int rc = generate(args);
    rc = rc != 0 ? rc : pack(args, args.images);
    return rc != 0 || !args.verify ? rc : verify(args.out);
  }
  if (!args.webdataset.empty() || !args.parts.empty()) {
    if (args.out.empty() || !args.input.empty() ||
        (!args.webdataset.empty() && !args.parts.empty())) {
      return fail(error{errc::invalid_argument,
                        "give one of --webdataset TARS or --parts DIR, with --out DIR"});
    }
    int rc = pack_multipart(args);
    return rc != 0 || !args.verify ? rc : verify(args.out);
  }
  if (!args.input.empty() && !args.out.empty()) {
    int rc = pack(args, args.input);
    return rc != 0 || !args.verify ? rc : verify(args.out);
  }
  if (!args.input.empty() && args.verify) {
    return verify(args.input);
  }
  return fail(
      error{errc::invalid_argument,
            "nothing to do: give INPUT --out DIR, --webdataset TARS --out DIR, --parts DIR "
            "--out DIR, --synthetic N --images DIR --out DIR, --synthetic-volumes N --out DIR, or "
            "--verify DATASET_DIR "
            "(see --help)"});
}

// A directory to pack into before uploading: --stage, or a new temporary one (`made`).
expected<std::filesystem::path> staging_directory(const arguments& args, bool& made) {
  made = args.stage.empty();
  if (!made) {
    return std::filesystem::path(args.stage);
  }
  auto pattern = (std::filesystem::temp_directory_path() / "conveyor-pack-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return error{errc::io_error, pattern + ": cannot make a staging directory"};
  }
  return std::filesystem::path(pattern);
}

int upload(const arguments& args, const std::filesystem::path& stage, const std::string& url) {
  auto start = clock_type::now();
  progress_bar bar("upload", 100);
  std::uint64_t total = 0;
  if (auto m = read_manifest(stage)) {
    total = m->total_bytes();
  }
  auto sent = upload_dataset(stage, url, args.store, [&](std::uint64_t bytes) {
    bar.update(total > 0 ? 100 * bytes / total : 0);
  });
  bar.finish();
  if (!sent) {
    return fail(sent.error());
  }
  auto s = seconds_since(start);
  std::printf(
      "uploaded %llu objects to %s: %.1f MB in %.1f s, %.1f MB/s; %llu requests, %llu "
      "retries\n",
      static_cast<unsigned long long>(sent->objects), url.c_str(), mb(sent->bytes), s,
      s > 0 ? mb(sent->bytes) / s : 0.0, static_cast<unsigned long long>(sent->traffic.requests),
      static_cast<unsigned long long>(sent->traffic.retries));
  return 0;
}

// --out s3://...: packs into a staging directory, then uploads it.
int run_to_store(arguments args) {
  if (args.synthetic_volumes > 0) {
    return fail(error{errc::invalid_argument,
                      "--synthetic-volumes writes .npy files, not record shards: --out must be a "
                      "directory"});
  }
  if (auto at = parse_s3_url(args.out); !at) {
    return fail(error{errc::invalid_argument, "--out: " + at.error().message()});
  }
  const auto url = args.out;
  bool made = false;
  auto stage = staging_directory(args, made);
  if (!stage) {
    return fail(stage.error());
  }
  args.out = stage->string();
  int rc = run(args);
  if (rc == 0) {
    rc = upload(args, *stage, url);
  }
  if (made) {
    std::error_code ec;
    std::filesystem::remove_all(*stage, ec);
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "conveyor-pack: packs images, WebDataset tars or key.ext files into record shards "
      "and verifies them"};
  arguments args;
  app.add_option("input", args.input, "an image folder (class sub-directories) or a list file");
  app.add_option("--webdataset", args.webdataset,
                 "pack a WebDataset tar set (a directory of .tar files, or one .tar file): a "
                 "record of several parts per sample");
  app.add_option("--parts", args.parts,
                 "pack a directory of key.ext files (000.jpg, 000.cls, ...): a record of several "
                 "parts per key");
  app.add_option("--out", args.out,
                 "the dataset directory to write, or s3://bucket/prefix to upload it to");
  app.add_option("--stage", args.stage,
                 "with --out s3://: pack here before uploading (default: a temporary directory)");
  app.add_option("--endpoint-url", args.store.endpoint_url,
                 "with --out s3://: the store's endpoint (default: AWS_ENDPOINT_URL, or AWS)");
  app.add_option("--region", args.store.region, "with --out s3://: the region");
  app.add_option("--profile", args.store.profile,
                 "with --out s3://: the AWS profile whose credentials to use");
  app.add_option("--shard-size", args.shard_size, "target size of a shard (default 64M)");
  app.add_flag("--verify", args.verify, "re-read every record and check its checksum");
  app.add_flag("--restart", args.restart,
               "store JPEGs with a restart marker per MCU row and their index (the same pixels): "
               "crops decode from their own rows");
  app.add_option("--synthetic", args.synthetic, "generate N sample JPEGs into --images first");
  app.add_option("--images", args.images, "where --synthetic writes its images");
  app.add_option("--synthetic-volumes", args.synthetic_volumes,
                 "write N KiTS19-like 3D cases (case_XXXXX_x.npy, case_XXXXX_y.npy) into --out");
  app.add_option("--large-fraction", args.synthetic_opts.large_fraction,
                 "share of large (1800-3200 px) images")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--classes", args.synthetic_opts.classes, "classes of the synthetic set")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", args.synthetic_opts.seed,
                 "seed of the synthetic set (--synthetic, --synthetic-volumes)");
  if (auto exit_code = conveyor::parse_command_line(app, argc, argv)) {
    return *exit_code;
  }
  return is_s3_url(args.out) ? run_to_store(args) : run(args);
}
