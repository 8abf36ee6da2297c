// Compiled with the build's own flags (and nothing else): which features the compiler was told it may use,
// from its predefined macros. Data only, so it carries no instruction the check would have to guard.
namespace gradsync::native_detail {

extern const char kBuiltFeatures[];
const char kBuiltFeatures[] =
    ""
#if defined(__SSE3__)
    " sse3"
#endif
#if defined(__SSSE3__)
    " ssse3"
#endif
#if defined(__SSE4_1__)
    " sse4.1"
#endif
#if defined(__SSE4_2__)
    " sse4.2"
#endif
#if defined(__POPCNT__)
    " popcnt"
#endif
#if defined(__AES__)
    " aes"
#endif
#if defined(__PCLMUL__)
    " pclmul"
#endif
#if defined(__AVX__)
    " avx"
#endif
#if defined(__AVX2__)
    " avx2"
#endif
#if defined(__FMA__)
    " fma"
#endif
#if defined(__F16C__)
    " f16c"
#endif
#if defined(__BMI__)
    " bmi"
#endif
#if defined(__BMI2__)
    " bmi2"
#endif
#if defined(__AVX512F__)
    " avx512f"
#endif
#if defined(__AVX512CD__)
    " avx512cd"
#endif
#if defined(__AVX512DQ__)
    " avx512dq"
#endif
#if defined(__AVX512BW__)
    " avx512bw"
#endif
#if defined(__AVX512VL__)
    " avx512vl"
#endif
#if defined(__AVX512VNNI__)
    " avx512vnni"
#endif
#if defined(__AVX512BF16__)
    " avx512bf16"
#endif
#if defined(__AVX512VBMI__)
    " avx512vbmi"
#endif
#if defined(__AVX512IFMA__)
    " avx512ifma"
#endif
#if defined(__GFNI__)
    " gfni"
#endif
#if defined(__VPCLMULQDQ__)
    " vpclmulqdq"
#endif
    ;

}  // namespace gradsync::native_detail
