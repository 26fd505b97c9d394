// models/data/pipeline.h: tile indexing, balanced selection and the
// prefetching input pipeline, on real image files in a scratch directory.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <thread>
#include <tuple>

#include <catch2/catch.hpp>

#include "models/data/field_generator.h"
#include "models/data/pipeline.h"
#include "tests/models/checkpoint_test_util.h"

using namespace dflow;
using namespace dflow::models;
using dflow::testing::ExpectError;
using dflow::testing::ReadBytes;
using dflow::testing::ScratchDir;
using dflow::testing::WriteBytes;

namespace {

using TileKey = std::tuple<int64_t, int64_t, int64_t>;  // image, top, left

TileKey KeyOf(const TileExample& e) { return {e.image, e.tile.top, e.tile.left}; }

// `n` synthetic field images of different sizes (none a multiple of 32).
std::vector<AnnotatedImage> WriteFields(const ScratchDir& dir, int n) {
  std::vector<AnnotatedImage> images;
  for (int i = 0; i < n; ++i) {
    FieldOptions options;
    options.height = 70 + 9 * i;
    options.width = 85 + 13 * i;
    options.max_flowers = 12;
    FieldImage field = GenerateField(options, static_cast<uint64_t>(i));
    std::string path = dir / ("field" + std::to_string(i) + ".png");
    WritePng(path, field.image);
    images.push_back({path, field.points});
  }
  return images;
}

// A uint8 [h, w, 3] image whose pixels all differ from their mirror images.
Tensor Gradient(int64_t h, int64_t w) {
  Tensor t(DType::kUInt8, {h, w, 3});
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7 + 3);
  return t;
}

// Slot j of a [B, S, S, C] batch tensor as a [S, S, C] tensor.
Tensor Slot(const Tensor& batch, int64_t j) {
  int64_t s = batch.dim(1), c = batch.dim(3);
  Tensor out(DType::kFloat32, {s, s, c});
  std::copy_n(batch.data<float>() + j * s * s * c, s * s * c, out.data<float>());
  return out;
}

Tensor Mirror(const Tensor& slot) {
  int64_t s = slot.dim(0), c = slot.dim(2);
  Tensor out(DType::kFloat32, slot.shape());
  for (int64_t r = 0; r < s; ++r)
    for (int64_t col = 0; col < s; ++col)
      for (int64_t k = 0; k < c; ++k)
        out.data<float>()[(r * s + col) * c + k] = slot.data<float>()[(r * s + s - 1 - col) * c + k];
  return out;
}

double SumOf(const Tensor& t) {
  double s = 0;
  for (float v : t.flat<float>()) s += v;
  return s;
}

std::vector<Batch> Take(InputPipeline& pipeline, int n) {
  std::vector<Batch> batches;
  for (int i = 0; i < n; ++i) batches.push_back(*pipeline.Next());
  return batches;
}

// Every batch until the end of a repeat = false pipeline.
std::vector<Batch> All(InputPipeline& pipeline) {
  std::vector<Batch> batches;
  while (auto batch = pipeline.Next()) batches.push_back(std::move(*batch));
  return batches;
}

std::multiset<TileKey> KeysOf(const std::vector<Batch>& batches) {
  std::multiset<TileKey> keys;
  for (const Batch& b : batches)
    for (const TileExample& e : b.examples) keys.insert(KeyOf(e));
  return keys;
}

double SecondsToDestroy(std::unique_ptr<InputPipeline> pipeline) {
  auto start = std::chrono::steady_clock::now();
  pipeline.reset();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("IndexTiles tiles an image that is not a multiple of the tile and counts points",
          "[pipeline]") {
  ScratchDir dir("pipeline_index");
  WritePng(dir / "a.png", Gradient(50, 70));  // 2 rows x 3 columns of 32-pixel tiles
  std::vector<Point> points = {{1, 1}, {33, 2}, {69.5, 49.5}, {69, 40}, {10, 33}};
  TileIndex index = IndexTiles({{dir / "a.png", points}}, 32);
  CHECK(index.tile_size == 32);
  REQUIRE(index.sizes.size() == 1);
  CHECK((index.sizes[0].height == 50 && index.sizes[0].width == 70));
  REQUIRE(index.tiles.size() == 6);
  std::vector<int64_t> tops = {0, 0, 0, 32, 32, 32}, lefts = {0, 32, 64, 0, 32, 64};
  std::vector<int64_t> counts = {1, 1, 0, 1, 0, 2};
  for (size_t i = 0; i < 6; ++i) {
    CHECK(index.tiles[i].image == 0);
    CHECK(index.tiles[i].tile.top == tops[i]);
    CHECK(index.tiles[i].tile.left == lefts[i]);
    CHECK(index.tiles[i].count == counts[i]);
  }
}

TEST_CASE("IndexTiles names the file of a bad point or a bad image", "[pipeline]") {
  ScratchDir dir("pipeline_index_errors");
  WritePng(dir / "a.png", Gradient(50, 70));
  ExpectError([&] { IndexTiles({{dir / "a.png", {{3, 3}, {70, 10}}}}, 32); },
              Code::kInvalidArgument, {"a.png", "point 1", "70", "outside"});
  ExpectError([&] { IndexTiles({{dir / "a.png", {{3, -0.5}}}}, 32); }, Code::kInvalidArgument,
              {"a.png", "point 0"});
  ExpectError([&] { IndexTiles({{dir / "a.png", {{NAN, 1}}}}, 32); }, Code::kInvalidArgument,
              {"a.png", "point 0"});
  ExpectError([&] { IndexTiles({}, 32); }, Code::kInvalidArgument, {"empty"});
  ExpectError([&] { IndexTiles({{dir / "a.png", {}}}, 0); }, Code::kInvalidArgument, {"tile_size"});
  ExpectError([&] { IndexTiles({{dir / "missing.png", {}}}, 32); }, Code::kNotFound, {"missing.png"});
  WriteBytes(dir / "garbage.png", "\x01\x02 these bytes are not an image \xff\xfe");
  ExpectError([&] { IndexTiles({{dir / "a.png", {}}, {dir / "garbage.png", {}}}, 32); },
              Code::kDataLoss, {"garbage.png"});
}

TEST_CASE("BalancedSelection draws the smallest bin's size from every bin, afresh each epoch",
          "[pipeline]") {
  std::vector<CountBin> bins = ParseCountBins("0,1,2-3,4+");
  // Bin sizes: "0": 10, "1": 3, "2-3": 20, "4+": 0; -1 is in no bin.
  std::vector<int64_t> counts;
  for (int i = 0; i < 10; ++i) counts.push_back(0);
  for (int i = 0; i < 3; ++i) counts.push_back(1);
  for (int i = 0; i < 20; ++i) counts.push_back(2 + i % 2);
  counts.push_back(-1);
  std::set<int64_t> used;
  std::set<std::vector<int64_t>> draws;
  for (int64_t epoch = 0; epoch < 60; ++epoch) {
    std::vector<int64_t> picked = BalancedSelection(counts, bins, 7, epoch);
    CHECK(picked == BalancedSelection(counts, bins, 7, epoch));
    REQUIRE(picked.size() == 9);
    std::vector<int> per_bin(bins.size(), 0);
    for (int64_t i : picked)
      for (size_t b = 0; b < bins.size(); ++b)
        if (bins[b].Contains(static_cast<double>(counts[i]))) ++per_bin[b];
    CHECK(per_bin == std::vector<int>{3, 3, 3, 0});
    CHECK(std::set<int64_t>(picked.begin(), picked.end()).size() == 9);  // no repeats
    used.insert(picked.begin(), picked.end());
    draws.insert(picked);
  }
  CHECK(draws.size() > 50);            // epochs draw afresh
  CHECK(used.size() == 33);            // and over epochs use every tile in a bin
  CHECK(used.count(33) == 0);          // but never the count outside every bin
  CHECK(BalancedSelection(counts, bins, 8, 0) != BalancedSelection(counts, bins, 7, 0));
  CHECK(BalancedSelection({-1, -2}, bins, 1, 0).empty());
  ExpectError([&] { BalancedSelection(counts, {}, 1, 0); }, Code::kInvalidArgument, {"bins"});
}

TEST_CASE("one epoch visits every tile once with density summing to the count", "[pipeline]") {
  ScratchDir dir("pipeline_epoch");
  TileIndex index = IndexTiles(WriteFields(dir, 3), 32);
  PipelineOptions options;
  options.batch_size = 5;
  options.repeat = false;
  options.drop_remainder = false;
  options.num_parallel_calls = 3;
  InputPipeline pipeline(index, options);
  int64_t n = static_cast<int64_t>(index.tiles.size());
  CHECK(pipeline.batches_per_epoch() == (n + 4) / 5);
  std::vector<Batch> batches = All(pipeline);
  CHECK_FALSE(pipeline.Next().has_value());  // and stays at the end
  REQUIRE(static_cast<int64_t>(batches.size()) == pipeline.batches_per_epoch());
  std::multiset<TileKey> expected;
  for (const TileExample& t : index.tiles) expected.insert(KeyOf(t));
  CHECK(KeysOf(batches) == expected);
  CHECK(batches.back().examples.size() == static_cast<size_t>(n % 5 == 0 ? 5 : n % 5));
  for (size_t i = 0; i < batches.size(); ++i) {
    const Batch& b = batches[i];
    CHECK((b.step == static_cast<int64_t>(i) && b.epoch == 0));
    int64_t size = static_cast<int64_t>(b.examples.size());
    CHECK(b.images.shape() == Shape{size, 32, 32, 3});
    CHECK(b.density.shape() == Shape{size, 32, 32, 1});
    for (int64_t j = 0; j < size; ++j) {
      const TileExample& e = b.examples[j];
      CHECK(b.counts[j] == static_cast<double>(e.count));
      CHECK(std::abs(SumOf(Slot(b.density, j)) - e.count) < 1e-3);
      // The slot holds this tile's pixels scaled to [0, 1].
      Tensor crop = CropTile(ReadImage(index.images[e.image].path, 3), e.tile, 32);
      Tensor slot = Slot(b.images, j);
      for (int64_t k = 0; k < crop.NumElements(); k += 97)
        CHECK(slot.data<float>()[k] == crop.data<uint8_t>()[k] / 255.0f);
    }
  }
}

TEST_CASE("shards partition an epoch", "[pipeline]") {
  ScratchDir dir("pipeline_shards");
  TileIndex index = IndexTiles(WriteFields(dir, 3), 32);
  std::multiset<TileKey> seen;
  std::vector<std::multiset<TileKey>> per_shard;
  for (int shard = 0; shard < 2; ++shard) {
    PipelineOptions options;
    options.batch_size = 4;
    options.repeat = false;
    options.drop_remainder = false;
    options.shard_index = shard;
    options.num_shards = 2;
    InputPipeline pipeline(index, options);
    per_shard.push_back(KeysOf(All(pipeline)));
    seen.insert(per_shard.back().begin(), per_shard.back().end());
  }
  std::multiset<TileKey> expected;
  for (const TileExample& t : index.tiles) expected.insert(KeyOf(t));
  CHECK(seen == expected);  // together every tile once, so the shards are disjoint
  CHECK(per_shard[0].size() == (expected.size() + 1) / 2);

  // With drop_remainder both shards take the same number of steps: 17 tiles
  // are 9 + 8, and both shards make 8 / 3 = 2 batches, not 3 and 2.
  index.tiles.resize(2 * 8 + 1);
  std::vector<int64_t> batches;
  for (int shard = 0; shard < 2; ++shard) {
    PipelineOptions options;
    options.batch_size = 3;
    options.shard_index = shard;
    options.num_shards = 2;
    batches.push_back(InputPipeline(index, options).batches_per_epoch());
  }
  CHECK(batches == std::vector<int64_t>{2, 2});
}

TEST_CASE("start_step resumes with exactly the batches that would have come", "[pipeline]") {
  ScratchDir dir("pipeline_resume");
  TileIndex index = IndexTiles(WriteFields(dir, 3), 32);
  PipelineOptions options;
  options.batch_size = 3;
  options.flip = true;
  options.balance_bins = true;
  options.bins = ParseCountBins("0,1+");
  options.seed = 11;
  InputPipeline from_start(index, options);
  int64_t per_epoch = from_start.batches_per_epoch();
  REQUIRE(per_epoch >= 2);
  int skip = static_cast<int>(per_epoch) + 1;  // resume inside the second epoch
  std::vector<Batch> all = Take(from_start, skip + 2 * static_cast<int>(per_epoch));
  options.start_step = skip;
  InputPipeline resumed(index, options);
  std::vector<Batch> rest = Take(resumed, 2 * static_cast<int>(per_epoch));
  for (size_t i = 0; i < rest.size(); ++i) {
    const Batch& a = all[skip + i];
    const Batch& b = rest[i];
    CHECK((a.step == b.step && a.epoch == b.epoch && a.step == skip + static_cast<int64_t>(i)));
    CHECK(KeysOf({a}) == KeysOf({b}));
    CHECK(a.images.Equals(b.images));
    CHECK(a.density.Equals(b.density));
    CHECK(a.counts == b.counts);
  }
  // Balanced epochs: as many tiles with 0 points as with some, drawn afresh.
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    int64_t zero = 0, some = 0;
    for (const Batch& b : all)
      if (b.epoch == epoch)
        for (const TileExample& e : b.examples) ++(e.count == 0 ? zero : some);
    CHECK(zero + some == per_epoch * 3);
    CHECK(std::abs(zero - some) <= 2);  // drop_remainder cuts at most 2 of the epoch's tiles
  }
}

TEST_CASE("flips mirror the image and its density and keep the count", "[pipeline]") {
  ScratchDir dir("pipeline_flip");
  TileIndex index = IndexTiles(WriteFields(dir, 2), 32);
  PipelineOptions options;
  options.batch_size = 4;
  InputPipeline plain(index, options);
  options.flip = true;
  InputPipeline flipping(index, options);
  int flipped = 0, kept = 0;
  for (const Batch& a : Take(plain, 6)) {
    Batch b = *flipping.Next();
    REQUIRE(KeysOf({a}) == KeysOf({b}));
    for (int64_t j = 0; j < static_cast<int64_t>(a.examples.size()); ++j) {
      Tensor image = Slot(a.images, j), density = Slot(a.density, j);
      if (Slot(b.images, j).Equals(image)) {
        ++kept;
        CHECK(Slot(b.density, j).Equals(density));
      } else {
        ++flipped;
        CHECK(Slot(b.images, j).Equals(Mirror(image)));
        CHECK(Slot(b.density, j).Equals(Mirror(density)));
      }
      CHECK(std::abs(SumOf(Slot(b.density, j)) - b.counts[j]) < 1e-3);
    }
  }
  CHECK(flipped > 0);
  CHECK(kept > 0);
}

TEST_CASE("a corrupt image fails Next() naming the file, and the pipeline stays failed",
          "[pipeline]") {
  ScratchDir dir("pipeline_corrupt");
  WritePng(dir / "good.png", Gradient(64, 64));
  std::string bytes = ReadBytes(dir / "good.png");
  WriteBytes(dir / "truncated.png", bytes.substr(0, bytes.size() / 2));  // the header still reads
  TileIndex index = IndexTiles({{dir / "truncated.png", {{5, 5}}}}, 32);
  PipelineOptions options;
  options.batch_size = 2;
  auto pipeline = std::make_unique<InputPipeline>(index, options);
  ExpectError([&] { pipeline->Next(); }, Code::kDataLoss, {"truncated.png"});
  ExpectError([&] { pipeline->Next(); }, Code::kDataLoss, {"truncated.png"});
  CHECK(SecondsToDestroy(std::move(pipeline)) < 5);

  // A file that changed size since it was indexed is named too.
  index = IndexTiles({{dir / "good.png", {}}}, 32);
  WritePng(dir / "good.png", Gradient(40, 64));
  InputPipeline changed(index, options);
  ExpectError([&] { changed.Next(); }, Code::kDataLoss, {"good.png", "indexed"});
}

TEST_CASE("destroying a pipeline returns promptly, whether its queue is full or not",
          "[pipeline]") {
  ScratchDir dir("pipeline_stop");
  TileIndex index = IndexTiles(WriteFields(dir, 2), 32);
  PipelineOptions options;
  options.batch_size = 2;
  options.prefetch_batches = 1;
  auto full = std::make_unique<InputPipeline>(index, options);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the producer fills the queue
  CHECK(SecondsToDestroy(std::move(full)) < 5);
  CHECK(SecondsToDestroy(std::make_unique<InputPipeline>(index, options)) < 5);  // just started
  auto used = std::make_unique<InputPipeline>(index, options);
  Take(*used, 3);
  CHECK(SecondsToDestroy(std::move(used)) < 5);

  // In the middle of decoding a batch of large images.
  WritePng(dir / "large.png", Gradient(900, 1200));
  TileIndex large = IndexTiles({{dir / "large.png", {}}, {dir / "large.png", {}}}, 64);
  options.batch_size = 64;
  for (int wait_ms : {0, 30}) {
    auto busy = std::make_unique<InputPipeline>(large, options);
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    CHECK(SecondsToDestroy(std::move(busy)) < 5);
  }
}

TEST_CASE("bad pipeline options are named errors", "[pipeline]") {
  ScratchDir dir("pipeline_options");
  WritePng(dir / "a.png", Gradient(50, 70));
  TileIndex index = IndexTiles({{dir / "a.png", {{1, 1}}}}, 32);  // 6 tiles, one with a point
  auto expect = [&](const std::function<void(PipelineOptions&)>& change,
                    const std::vector<std::string>& parts) {
    PipelineOptions options;
    options.batch_size = 2;
    change(options);
    ExpectError([&] { InputPipeline pipeline(index, options); }, Code::kInvalidArgument, parts);
  };
  expect([](PipelineOptions& o) { o.batch_size = 0; }, {"batch_size", "0"});
  expect([](PipelineOptions& o) { o.num_parallel_calls = 0; }, {"num_parallel_calls"});
  expect([](PipelineOptions& o) { o.prefetch_batches = 0; }, {"prefetch_batches"});
  expect([](PipelineOptions& o) { o.shard_index = 2, o.num_shards = 2; }, {"shard_index", "2"});
  expect([](PipelineOptions& o) { o.shard_index = -1, o.num_shards = 2; }, {"shard_index"});
  expect([](PipelineOptions& o) { o.num_shards = 0; }, {"num_shards"});
  expect([](PipelineOptions& o) { o.start_step = -3; }, {"start_step", "-3"});
  expect([](PipelineOptions& o) { o.sigma = 0; }, {"sigma"});
  expect([](PipelineOptions& o) { o.sigma = NAN; }, {"sigma"});
  expect([](PipelineOptions& o) { o.balance_bins = true, o.bins = {}; }, {"bins"});
  expect([](PipelineOptions& o) { o.batch_size = 7; }, {"batch_size 7", "drop_remainder"});
  expect([](PipelineOptions& o) { o.shard_index = 6, o.num_shards = 7; }, {"shard 6", "no examples"});
  // Balanced: one tile per bin ("0" and "1"), so a batch of 3 never fills.
  expect([](PipelineOptions& o) { o.balance_bins = true, o.batch_size = 3; }, {"batch_size 3"});
  expect([](PipelineOptions& o) { o.balance_bins = true, o.bins = ParseCountBins("5+"); },
         {"no examples", "balancing"});
  ExpectError([&] { InputPipeline pipeline(TileIndex{}, PipelineOptions{}); },
              Code::kInvalidArgument, {"tile"});

  PipelineOptions balanced;
  balanced.batch_size = 2;
  balanced.balance_bins = true;
  CHECK(InputPipeline(index, balanced).batches_per_epoch() == 1);  // bins 0 and 1, one each
  balanced.repeat = false;
  balanced.start_step = 5;  // past the only epoch: nothing to read
  InputPipeline past_end(index, balanced);
  CHECK_FALSE(past_end.Next().has_value());
}
