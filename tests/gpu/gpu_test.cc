#include "carton/gpu/gpu.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <vector>

// These tests run against tests/gpu/fake_cuda.cc (CARTON_LIBCUDA is set by
// CTest), which has two GPUs.

namespace carton::gpu {
namespace {

TEST_CASE("gpu: lists the driver's GPUs with their names, UUIDs and memory", "[gpu]") {
  auto gpus = ListGpus();
  REQUIRE(gpus.ok());
  REQUIRE(gpus->size() == 2);
  CHECK((*gpus)[0].index == 0);
  CHECK((*gpus)[0].name == "Fake GPU 0");
  CHECK((*gpus)[0].uuid == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
  CHECK((*gpus)[1].uuid == "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
  CHECK((*gpus)[1].total_memory == (std::uint64_t{1} << 30));
}

TEST_CASE("gpu: a GPU that does not exist is not found", "[gpu]") {
  auto device = OpenDevice(2);
  REQUIRE_FALSE(device.ok());
  CHECK(device.status().code() == StatusCode::kNotFound);
  CHECK(device.status().message() == "cuda:2: no such GPU (2 found)");
}

TEST_CASE("gpu: bytes copied through a stream arrive once the event completes", "[gpu]") {
  auto device = OpenDevice(1);
  INFO(device.status().ToString());
  REQUIRE(device.ok());
  auto memory = device->Allocate(4096);
  REQUIRE(memory.ok());
  auto staging = device->AllocatePinned(4096);
  REQUIRE(staging.ok());
  for (int i = 0; i < 4096; ++i) staging->data()[i] = std::byte(i * 7);
  auto stream = device->CreateStream();
  auto event = device->CreateEvent();
  REQUIRE(stream.ok());
  REQUIRE(event.ok());
  REQUIRE(stream->CopyToDevice(memory->address(), staging->data(), 4096).ok());
  REQUIRE(stream->Record(*event).ok());
  REQUIRE(event->Synchronize().ok());
  std::vector<std::byte> back(4096);
  REQUIRE(device->CopyToHost(back.data(), memory->address(), 4096).ok());
  CHECK(std::equal(back.begin(), back.end(), staging->data()));
}

TEST_CASE("gpu: an allocation the device cannot hold says out of memory", "[gpu]") {
  auto device = OpenDevice(0);
  REQUIRE(device.ok());
  auto memory = device->Allocate(std::size_t{2} << 30);
  REQUIRE_FALSE(memory.ok());
  CHECK(memory.status().code() == StatusCode::kIoError);
  CHECK(memory.status().message() ==
        "cuda:0: out of memory allocating 2147483648 bytes (1073741824 bytes free)");
}

}  // namespace
}  // namespace carton::gpu
