"""The start every end-to-end script shares: the tool paths from the
command line (as test/e2e/CMakeLists.txt passes them) and a fresh work
directory holding the built-in corpus as token shards (work/data)."""
import argparse
import os
import shutil
import subprocess
import sys


def parse_and_prepare(description):
    """Returns the arguments (gptc, gptrun, model, shards_script, work)
    after emptying `work` and writing work/data/{train,val}_*.bin."""
    parser = argparse.ArgumentParser(description=description)
    for flag in ("--gptc", "--gptrun", "--model", "--shards-script", "--work"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    subprocess.run([sys.executable, args.shards_script, args.work + "/data",
                    "--licenses"], check=True, stdout=subprocess.DEVNULL)
    return args
