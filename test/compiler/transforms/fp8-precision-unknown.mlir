// RUN: gpt-opt %s -fp8-precision=policy=fp8-blockwise -verify-diagnostics

// expected-error @+1 {{fp8-precision has no policy 'fp8-blockwise'; use bf16, fp8-tensorwise, fp8-delayed or fp8-rowwise (a plugin's policy needs gptc --load-pass-plugin=LIB.so first)}}
module {
}
