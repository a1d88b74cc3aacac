# lit configuration for gptc: dialect round-trips and diagnostics, the
# checked-in models, and the gptc / gpt-model tools.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "gptc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.gptc_obj_root, "test")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "unit", "Inputs"]

config.substitutions.append(("%models", os.path.join(config.gptc_src_root, "models")))
# Precision plugins built for the tests (test/plugins).
config.substitutions.append(("%plugins", os.path.join(config.gptc_obj_root, "test", "plugins")))
# Variables captured in one CHECK-LABEL block never leak into the next.
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["gpt-opt", "gptc", "gpt-model", "gpt-data", "gptrun"], [config.gptc_tools_dir])
llvm_config.add_tool_substitutions(["FileCheck", "not", "count", "split-file"],
                                   [config.llvm_tools_dir])
