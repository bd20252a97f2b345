// Whether this translation unit is built with a sanitizer (STAX_SANITIZE, scripts/sanitize.sh):
// gcc defines __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__, clang answers __has_feature.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define STAX_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STAX_TEST_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define STAX_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STAX_TEST_TSAN 1
#endif
#endif

namespace stax::test {
#ifdef STAX_TEST_ASAN
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#ifdef STAX_TEST_TSAN
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
}  // namespace stax::test
