// fast_div (the launchers' division by a divisor fixed at launch) against n / d: the host
// expression (64-bit product) on the CPU and the device expression (`__umulhi`) on the GPU, over
// every divisor shape the launchers use and the edges of its documented domain n < 2^31.
#include <fp4fuse/fp4fuse.cuh>

#include "../kernels/kernel_test_support.cuh"

using namespace fp4fuse_test;

namespace {

/// Divisors: small ones, powers of two and their neighbours, the domain's edge, and random ones.
std::vector<std::uint32_t> divisors(std::mt19937_64& g) {
  std::vector<std::uint32_t> d = {1, 2, 3, 4, 5, 7, 31, 32, 112, 127, 128, 129, 448, 1792, 65535, 65536, 65537, 1000003, 0x40000000u, 0x7FFFFFFFu};
  for (int i = 0; i < 200; ++i) d.push_back(static_cast<std::uint32_t>(g() % 0x7FFFFFFFu) + 1);
  return d;
}

/// Numerators for divisor d: the edges (0, d - 1, d, d + 1, the largest multiple of d below 2^31,
/// 2^31 - 1) and random ones below 2^31.
std::vector<std::uint32_t> numerators(std::uint32_t d, std::mt19937_64& g, int random) {
  std::vector<std::uint32_t> n = {0u, d - 1, d, d + 1, 0x7FFFFFFFu, 0x7FFFFFFFu - (0x7FFFFFFFu % d), 0x7FFFFFFFu - (0x7FFFFFFFu % d) - 1};
  for (int i = 0; i < random; ++i) n.push_back(static_cast<std::uint32_t>(g() & 0x7FFFFFFFu));
  for (auto& v : n) v &= 0x7FFFFFFFu;  // d + 1 of d = 2^31 - 1
  return n;
}

/// Thread i computes f[i / per](n[i]) with the device expression.
__global__ void fast_div_kernel(const fp4fuse::detail::fast_div* f, const std::uint32_t* n, std::uint32_t* q, std::uint32_t count,
                                std::uint32_t per) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) q[i] = f[i / per](n[i]);
}

}  // namespace

TEST_CASE("fast_div: the host expression gives exact quotients for every divisor shape the launchers use", "[fast_div]") {
  auto g = rng("divmod");
  for (std::uint32_t d : divisors(g)) {
    const fp4fuse::detail::fast_div f(d);
    for (std::uint32_t n : numerators(d, g, 20000)) {
      INFO("n = " << n << ", d = " << d);
      REQUIRE(f(n) == n / d);
    }
  }
}

TEST_CASE("fast_div [gpu]: the device expression (__umulhi) gives exact quotients over the same divisors and numerators", "[gpu][fast_div]") {
  auto g = rng("divmod gpu");
  const std::vector<std::uint32_t> ds = divisors(g);
  constexpr int per = 4096 + 7;  // numerators per divisor: the 7 edges and 4096 random ones
  std::vector<fp4fuse::detail::fast_div> fs;
  std::vector<std::uint32_t> ns, want;
  for (std::uint32_t d : ds) {
    fs.emplace_back(d);
    for (std::uint32_t n : numerators(d, g, per - 7)) {
      ns.push_back(n);
      want.push_back(n / d);
    }
  }
  REQUIRE(ns.size() == ds.size() * per);
  const auto count = static_cast<std::uint32_t>(ns.size());
  device_buffer d_f(fs.size() * sizeof(fp4fuse::detail::fast_div)), d_n(ns.size() * 4), d_q(ns.size() * 4);
  d_f.upload(fs.data(), fs.size() * sizeof(fp4fuse::detail::fast_div));
  d_n.upload(ns.data(), ns.size() * 4);
  fast_div_kernel<<<(count + 255) / 256, 256>>>(d_f.as<fp4fuse::detail::fast_div>(), d_n.as<std::uint32_t>(), d_q.as<std::uint32_t>(), count, per);
  FP4FUSE_TEST_LAUNCHED();
  std::vector<std::uint32_t> got(ns.size());
  {
    const auto raw = d_q.download();  // every word written: device_buffer poisons it first
    std::memcpy(got.data(), raw.data(), raw.size());
  }
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (bad < 5) UNSCOPED_INFO("n = " << ns[i] << ", d = " << ds[i / per] << ": got " << got[i] << " want " << want[i]);
    ++bad;
  }
  CHECK(bad == 0);
  CHECK(d_q.guard_intact());
}
