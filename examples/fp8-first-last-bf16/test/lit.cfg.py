# lit configuration of the example plugin's tests: %gptc is the installed
# gptc, %plugin the plugin this project built, %models gptc's models.
import os

import lit.formats

config.name = "fp8-first-last-bf16"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.example_obj_root, "test")

config.substitutions.append(("%gptc", config.gptc))
config.substitutions.append(("%plugin", config.plugin))
config.substitutions.append(("%models", config.gptc_models))
# FileCheck from the LLVM gptc was built with.
config.environment["PATH"] = os.pathsep.join(
    [os.path.dirname(config.filecheck), os.environ.get("PATH", "")])
