// RUN: gpt-opt %s -gpt-specialize -verify-diagnostics

// expected-error @+1 {{gpt-specialize needs micro-batch > 0, got 0; pass gpt-specialize{micro-batch=B} (in the pipeline: gpt-train-pipeline{micro-batch=B})}}
module {
}
