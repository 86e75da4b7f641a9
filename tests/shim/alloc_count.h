// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// A test executable's allocation counter: include once per executable (it replaces malloc and
// its siblings, or installs AddressSanitizer's hooks). gAllocs counts the allocations made while
// gCounting is set, by any code in the process (glibc resolves every shared library's calls to
// them here: BLIS's and libmjdiff's too).

#ifndef MJDIFF_TESTS_ALLOC_COUNT_H_
#define MJDIFF_TESTS_ALLOC_COUNT_H_

#include <atomic>
#include <cstddef>

//---------------------------------- allocation counter -------------------------------------------

// Under AddressSanitizer, which owns malloc, its allocator hook counts every allocation
// (malloc, calloc, realloc, the aligned ones, operator new); elsewhere the test replaces the
// allocation functions with counting wrappers around glibc's own.
#if defined(__SANITIZE_ADDRESS__)
#define MJDIFF_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MJDIFF_TEST_ASAN 1
#endif
#endif

static std::atomic<int> gCounting{0};
static std::atomic<long> gAllocs{0};

static inline void noteAlloc() {
  if (gCounting.load(std::memory_order_relaxed)) gAllocs.fetch_add(1);
}

#ifdef MJDIFF_TEST_ASAN
// (sanitizer/allocator_interface.h's declaration: the header is not in every toolchain)
extern "C" int __sanitizer_install_malloc_and_free_hooks(
    void (*malloc_hook)(const volatile void*, size_t), void (*free_hook)(const volatile void*));

static void mallocHook(const volatile void*, size_t) {
  noteAlloc();
}
static void freeHook(const volatile void*) {}
[[maybe_unused]] static const int gHooks = __sanitizer_install_malloc_and_free_hooks(mallocHook, freeHook);
#else
extern "C" {
void* __libc_malloc(size_t n);
void* __libc_calloc(size_t n, size_t s);
void* __libc_realloc(void* p, size_t n);
void* __libc_memalign(size_t a, size_t n);
void __libc_free(void* p);
}

extern "C" {
void* malloc(size_t n) {
  noteAlloc();
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t s) {
  noteAlloc();
  return __libc_calloc(n, s);
}
void* realloc(void* p, size_t n) {
  noteAlloc();
  return __libc_realloc(p, n);
}
void* memalign(size_t a, size_t n) {
  noteAlloc();
  return __libc_memalign(a, n);
}
void* aligned_alloc(size_t a, size_t n) {
  noteAlloc();
  return __libc_memalign(a, n);
}
int posix_memalign(void** p, size_t a, size_t n) {
  noteAlloc();
  *p = __libc_memalign(a, n);
  return *p ? 0 : 12;
}
void free(void* p) {
  __libc_free(p);
}
}
#endif  // MJDIFF_TEST_ASAN

#endif  // MJDIFF_TESTS_ALLOC_COUNT_H_
