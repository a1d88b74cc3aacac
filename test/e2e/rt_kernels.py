"""The runtime calls of gptc --emit=rt output, read the way the runtime
names them: a producer's call with an FP8 output epilogue (its
`epilogue` descriptor, runtime/abi/gptrt_kernels.def) is
"<kernel>+amax", "+cast" or "+dual_cast", and a GEMM is "gemm.<form>"
(its operands, then its epilogues: "gemm.bf16+bias+gelu"), as gptrun
--profile-step and the runtime's errors label them
(runtime/abi/GemmForm.h)."""
import re

EPILOGUE = re.compile(r'\{[^{}]*\bout_dtype = [^{}]*\}')
NULL = re.compile(r'(%[\w.#]+) = rt\.null\b')
GEMM_DESCRIPTOR = re.compile(r'consts \[\{([^{}]*)\}')
# gptrt_gemm's optional buffers, by position (gptrt_kernels.def).
GEMM_INS = ("a", "b", "scale_a", "scale_b", "bias", "dgelu_pre", "scale")
GEMM_OUTS = ("c", "gelu_pre", "dbias", "amax", "q")


def buffers(line, group):
    """The SSA names of a call's ins(...) or outs(...) list."""
    found = re.search(group + r'\(([^:]*):', line)
    return [v.strip() for v in found.group(1).split(",")] if found else []


def gemm_fields(line):
    """The gemm_desc fields a call sets (the others take their defaults)."""
    fields = GEMM_DESCRIPTOR.search(line)
    return {k: int(v) for k, v in
            re.findall(r'(\w+) = (-?\d+)', fields.group(1) if fields else "")}


def gemm_form(line, nulls):
    """A gemm call's form as the runtime names it: f32, bf16, fp8 or
    fp8_rowwise, then +bias, +gelu, +dgelu, +dbias, +accumulate."""
    fields = gemm_fields(line)
    a_dtype = fields.get("a_dtype", 1)
    operands = ("f32" if a_dtype == 1 else "bf16" if a_dtype == 2 else
                "fp8_rowwise" if fields.get("a_scaling", 0) or
                fields.get("b_scaling", 0) else "fp8")
    given = set()
    for names, group in ((GEMM_INS, "ins"), (GEMM_OUTS, "outs")):
        for slot, value in zip(names, buffers(line, group)):
            if value not in nulls:
                given.add(slot)
    form = operands
    for slot, flag in (("bias", "bias"), ("gelu_pre", "gelu"),
                       ("dgelu_pre", "dgelu"), ("dbias", "dbias")):
        if slot in given:
            form += "+" + flag
    if fields.get("c_dtype", 1) == 257:
        form += "+accumulate"
    return form


def lines_with_nulls(rt):
    """Each line with the rt.null values its function has defined so far
    (SSA names are the function's own)."""
    nulls = set()
    for line in rt.splitlines():
        if "func.func" in line:
            nulls = set()
        nulls.update(NULL.findall(line))
        yield line, nulls


def kernel_forms(rt):
    """(kernel, epilogue work) of each rt.kernel call in order: a GEMM's
    kernel is "gemm.<form>"; the work is "" without an output epilogue,
    else "amax", "cast" or "dual_cast" (the producer writes both FP8
    layouts), read from the descriptor's fields."""
    forms = []
    for line, nulls in lines_with_nulls(rt):
        name = re.search(r'rt\.kernel "(\w+)"', line)
        if not name:
            continue
        epilogue = EPILOGUE.search(line)
        work = ""
        if epilogue:
            fields = epilogue.group(0)
            work = ("dual_cast" if "stat_slot_t =" in fields else
                    "cast" if "format =" in fields else "amax")
        kernel = name.group(1)
        if kernel == "gemm":
            kernel = "gemm." + gemm_form(line, nulls)
        forms.append((kernel, work))
    return forms


def gemm_calls(rt):
    """(form, gemm_desc fields) of each gemm call in order."""
    return [(gemm_form(line, nulls), gemm_fields(line))
            for line, nulls in lines_with_nulls(rt)
            if 'rt.kernel "gemm"' in line]


def label(kernel, work):
    """The runtime's name for a call: gptrt_<kernel>[+<work>]."""
    return "gptrt_" + kernel + ("+" + work if work else "")
