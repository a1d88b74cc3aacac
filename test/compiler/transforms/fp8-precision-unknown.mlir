// RUN: gpt-opt %s -fp8-precision=policy=fp8-blockwise -verify-diagnostics

// expected-error @+1 {{fp8-precision has no policy 'fp8-blockwise'; use bf16, fp8-tensorwise or fp8-delayed}}
module {
}
