// RUN: gpt-opt %s -gpt-precision=precision=fp16 -verify-diagnostics

// expected-error @+1 {{gpt-precision has no precision 'fp16'; use fp32 or bf16 (the FP8 policies come with fp8-precision)}}
module {
}
