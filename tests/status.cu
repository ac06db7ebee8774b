// status.hpp: every status has its own sentence; a result's message is its recorded sentence, or
// the status's (the CUDA error's text for cuda_error); result::with formats and cuts at its buffer
// (239 characters and the terminator), never past it.
#include <fp4fuse/status.hpp>

#include <cstring>
#include <set>
#include <string>

#include "test_support.hpp"

using fp4fuse::result;
using fp4fuse::status;

TEST_CASE("status_message: one distinct sentence per status, each failure naming the library", "[status]") {
  const status all[] = {status::ok,         status::null_pointer, status::misaligned_pointer, status::bad_shape,
                        status::not_multiple_of_block, status::bad_leading_dimension, status::unsupported_architecture,
                        status::no_device, status::cuda_error};
  std::set<std::string> seen;
  for (const status s : all) {
    const std::string m = fp4fuse::status_message(s);
    INFO(static_cast<int>(s) << ": " << m);
    CHECK(!m.empty());
    CHECK(seen.insert(m).second);
    CHECK((s == status::ok) == (m.rfind("fp4fuse: ", 0) != 0));
  }
  CHECK(std::string(fp4fuse::status_message(static_cast<status>(99))) == "fp4fuse: unknown status");
}

TEST_CASE("result: ok by default, its message the recorded sentence, else the status's or the CUDA error's", "[status]") {
  const result ok{};
  CHECK(static_cast<bool>(ok));
  CHECK(std::string(ok.message()) == "ok");
  const result refused{status::bad_shape};
  CHECK(!refused);
  CHECK(std::string(refused.message()) == fp4fuse::status_message(status::bad_shape));
  result failed{status::cuda_error};
  failed.cuda = cudaErrorInvalidValue;
  CHECK(std::string(failed.message()) == cudaGetErrorString(cudaErrorInvalidValue));
  const result with = result::with(status::null_pointer, "my_launcher: %s is null (%d)", "x", 7);
  CHECK(with.code == status::null_pointer);
  CHECK(std::string(with.message()) == "my_launcher: x is null (7)");
}

TEST_CASE("result::with: a sentence longer than the buffer is cut at 239 characters, terminated", "[status]") {
  const std::string long_name(1000, 'n');
  result r = result::with(status::bad_shape, "%s", long_name.c_str());
  CHECK(std::strlen(r.message()) == sizeof r.detail - 1);
  CHECK(std::string(r.message()) == long_name.substr(0, sizeof r.detail - 1));
  CHECK(sizeof r.detail == 240);
}
