/* What the methods' C sources need of the compiler, in one place.

   The loops are written with GNU C's vector extensions (vector_size, lane indexing,
   __builtin_convertvector): GCC and Clang compile them on every platform, and on
   Windows Clang does so in Visual Studio's toolchain (clang-cl, with MSVC's linker
   and C runtime). MSVC's own compiler has no portable vector types; it is refused
   here with that advice rather than failing on the first vector line. */
#ifndef ATTNPOOL_PORTABLE_H
#define ATTNPOOL_PORTABLE_H
#if !defined(__GNUC__) && !defined(__clang__)
#error "attnpool's loops need GNU C vector extensions: build with GCC or Clang (on Windows, clang-cl: CC=clang-cl)"
#endif
#if defined(_WIN32)
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif

/* Memory aligned to a vector: C11's aligned_alloc, which Windows' C runtime lacks (its
   _aligned_malloc takes the arguments the other way round and its own free). */
#include <stdlib.h>
#if defined(_WIN32)
#include <malloc.h>
#define aligned_allocate(alignment, size) _aligned_malloc((size), (alignment))
#define aligned_free(p) _aligned_free(p)
#else
#define aligned_allocate(alignment, size) aligned_alloc((alignment), (size))
#define aligned_free(p) free(p)
#endif
#endif
