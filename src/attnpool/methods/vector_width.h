/* The vector width of the instruction set compiled for: 512 bits with AVX-512,
   128 with NEON, else 256 (AVX; older x86 runs it as two 128-bit halves). Shared by
   the methods' C sources. */
#ifndef ATTNPOOL_VECTOR_WIDTH_H
#define ATTNPOOL_VECTOR_WIDTH_H
#if defined(__AVX512F__)
#define VECTOR_BYTES 64
#elif defined(__ARM_NEON)
#define VECTOR_BYTES 16
#else
#define VECTOR_BYTES 32
#endif
#endif
