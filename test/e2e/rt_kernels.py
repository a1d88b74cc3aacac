"""The runtime calls of gptc --emit=rt output, read the way the runtime
names them: a producer's call with an FP8 output epilogue (its
`epilogue` descriptor, runtime/abi/gptrt_kernels.def) is
"<kernel>+amax", "+cast" or "+dual_cast", as gptrun --profile-step and
the runtime's errors label it."""
import re

EPILOGUE = re.compile(r'\{[^{}]*\bout_dtype = [^{}]*\}')


def kernel_forms(rt):
    """(kernel, epilogue work) of each rt.kernel call in order: the work is
    "" without an output epilogue, else "amax", "cast" or "dual_cast" (the
    producer writes both FP8 layouts), read from the descriptor's fields."""
    forms = []
    for line in rt.splitlines():
        name = re.search(r'rt\.kernel "(\w+)"', line)
        if not name:
            continue
        epilogue = EPILOGUE.search(line)
        work = ""
        if epilogue:
            fields = epilogue.group(0)
            work = ("dual_cast" if "stat_slot_t =" in fields else
                    "cast" if "format =" in fields else "amax")
        forms.append((name.group(1), work))
    return forms


def label(kernel, work):
    """The runtime's name for a call: gptrt_<kernel>[+<work>]."""
    return "gptrt_" + kernel + ("+" + work if work else "")
