#pragma once
/// \file nan_policy.cuh
/// How a reduction treats NaN elements: `nan_policy::ignore` (fmaxf semantics, as TE and vLLM take
/// maxima) or `nan_policy::propagate` (any NaN makes the result NaN). Taken by `amax` as an option.
/// \code
/// const fp4fuse::nan_policy::propagate strict{};
/// \endcode
namespace fp4fuse {
namespace nan_policy {
/// NaN elements do not take part (fmaxf semantics).
struct ignore {};
/// A NaN element makes the result NaN.
struct propagate {};
}  // namespace nan_policy
}  // namespace fp4fuse
