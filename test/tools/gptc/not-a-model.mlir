// --report on a module without parameters says it is not a model.
// RUN: not gptc %s --report 2>&1 | FileCheck %s
// CHECK: error: is not a gpt model: it declares no gpt.param

func.func @f() {
  return
}
